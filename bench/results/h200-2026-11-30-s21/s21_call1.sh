#!/usr/bin/env bash
# Session 21, call 1.  (A) Does a fourth ring stage help the shared ring?  The warpgroups drift up to
# STAGES - 1 tiles apart; at equal clock the shared ring is 3.4% / 7.3% slower than one-warpgroup
# blocks at N=16384 / 4096 (s20).  Prediction: stages=4 +0.5-2% at D=128 (more slack, fewer waits
# for the slowest warpgroup's release), level at D=64.  Checks first, then the bench beside cuDNN.
# (B) The tuner with settle_ms (each candidate's own 0.5 s of load before its timing) against
# burst timing (--settle-ms 0), 4 candidates (default and its rival first): prediction, settle
# keeps the shared ring at D=128 N=16384 (+6-7% sustained), burst timing may pick one-warpgroup.
# ~8 min; timeout_s 580; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
S3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
S3F="variant=wgmma block_m=192 warps=12 block_n=128 stages=4 rowsum_mma=1"
S4F="variant=wgmma block_m=256 warps=16 block_n=128 stages=4 rowsum_mma=1"
ONE="variant=wgmma block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1"
while IFS='|' read -r cfg args; do
  r=$(timeout 60 $B/mxattn run $args --reps 2 --check-heads 2 --config "$cfg" 2>&1 | grep -E "^error|fail" | tr -s ' ' | tr '\n' ' ')
  stamp "check [$cfg] $args | $r"
done <<EOR
$S3F|--family int8-fp8 --head-dim 128 --seq 4096 --batch 1 --heads 4
$S3F|--family int8-fp8 --head-dim 96 --seq-q 1000 --seq-k 1300 --batch 2 --heads 4 --kv-heads 2
$S4F|--family int8-fp8 --head-dim 64 --seq-q 700 --seq-k 3000 --batch 2 --heads 3
EOR
sanitize_each "" <<EOR
$S3F|--family int8-fp8 --head-dim 128 --seq-q 450 --seq-k 700 --batch 2 --heads 2
EOR
BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  EXTRA_ROWS="int8-fp8[$S3F],int8-fp8[$ONE]" BENCH_TIMEOUT=170 MXATTN_BUILD=$B OUT=$L/b128 bash scripts/device.sh --bench > "$L/b128.log" 2>&1
stamp "bench D=128: $(grep '^## bench' "$L/b128.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/b128/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$S3F\]/[shared3 s4]/; s/\[$ONE\]/[one-wg]/" >> "$S"
BENCH_ARGS="--families int8-fp8 --dims 64 --seqs 16384 --causal no --baselines sdpa-cudnn --rounds 5 --rep-ms 1200 --clocks" \
  EXTRA_ROWS="int8-fp8[$S4F]" BENCH_TIMEOUT=90 MXATTN_BUILD=$B OUT=$L/b64 bash scripts/device.sh --bench > "$L/b64.log" 2>&1
stamp "bench D=64: $(grep '^## bench' "$L/b64.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/b64/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$S4F\]/[shared4 s4]/" >> "$S"
for settle in 500 0; do
  timeout $((560 - SECONDS)) $B/mxattn tune --family int8-fp8 --head-dims 128 --seqs 4096,16384 --causal none \
    --batch 4 --heads 32 --max-candidates 4 --settle-ms $settle --db /tmp/tune$settle.db > "$L/tune$settle.log" 2>&1
  stamp "tune settle=$settle rc=$?: $(grep -iE 'wall|winner|best' "$L/tune$settle.log" | tr -s ' ' | tr '\n' ';' | cut -c1-600)"
  $B/mxattn query --db /tmp/tune$settle.db > "$L/query$settle.log" 2>&1; cat "$L/query$settle.log" >> "$S"
  $B/mxattn query --db /tmp/tune$settle.db --json > "$L/query$settle.json" 2>&1
  python3 -c "import sqlite3,sys; [print('  meas', *r) for r in sqlite3.connect(sys.argv[1]).execute('select seq_bucket, status, round(median_ms,4), round(spread,4), config from measurements order by seq_bucket, median_ms')]" /tmp/tune$settle.db >> "$S" 2>&1
done
finish_call
exit 0
