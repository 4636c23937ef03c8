#!/usr/bin/env bash
# Session 20, call 5: the shared ring made persistent (persistent=1: one block an SM over row-block
# units b, b + grid, ...; the ring, and each warpgroup's Q, run on across units).  Checks against
# the CPU reference and compute-sanitizer, a short A/B, then the bench under the power cap beside
# cuDNN at D=128 and D=64.  Prediction (from calls 1-4: the non-persistent shared ring is 3.4% /
# 7.3% slower than one-warpgroup blocks at boost clock at N=16384 / 4096, as a few us a block of
# start and end would make it): persistent +1.5-3% at D=128 N=16384, +3-5% at N=4096.
# ~6 min; timeout_s 560; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
P3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1 persistent=1"
S3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
P4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1 persistent=1"
S4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1"
ONE="variant=wgmma block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1"
while IFS='|' read -r cfg args; do
  for c in "" "$cfg"; do
    r=$(timeout 60 $B/mxattn run $args --reps 2 --check-heads 2 ${c:+--config "$c"} 2>&1 | grep -E "^error|fail" | tr -s ' ' | tr '\n' ' ')
    stamp "check [${c:-default}] $args | $r"
  done
done <<EOR
$P3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 1 --heads 4
$P3|--family int8-fp8 --head-dim 128 --seq-q 1000 --seq-k 1300 --batch 2 --heads 4 --kv-heads 2
$P3 lse=1|--family int8-fp8 --head-dim 96 --seq-q 500 --seq-k 3000 --batch 1 --heads 1 --layout bnhd --dtype f16
$P4|--family int8-fp8 --head-dim 64 --seq 3000 --batch 2 --heads 3
$P3|--family int8-fp8 --head-dim 128 --seq 1024 --batch 4 --heads 40
EOR
sanitize_each "" <<EOR
$P3|--family int8-fp8 --head-dim 128 --seq-q 450 --seq-k 700 --batch 2 --heads 2
$P4|--family int8-fp8 --head-dim 64 --seq-q 600 --seq-k 333 --batch 1 --heads 3
EOR
for round in 1 2; do
  while IFS='|' read -r name cfg args; do
    t=$(timeout 120 $B/mxattn run $args --reps 50 --check-heads 0 ${cfg:+--config "$cfg"} 2>&1 | awk '/^time/ {print $2, $5}')
    echo "$round $name ${t:-failed failed} $args" >> "$L/ab.txt"
  done <<EOR
shared3|$S3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
persist3|$P3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
one|$ONE|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
shared3|$S3|--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
persist3|$P3|--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
one|$ONE|--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
EOR
done
sort -k2,2 -k5 "$L/ab.txt" | awk '{printf "%s %s best %s mean %s |", $1, $2, $3, $4; for (i=5;i<=NF;i++) if ($i ~ /^[0-9]+$/ && $(i-1) == "--seq") printf " N=%s", $i; print ""}' >> "$S"
BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 7 --rep-ms 1400 --clocks" \
  EXTRA_ROWS="int8-fp8[$P3],int8-fp8[$ONE]" BENCH_TIMEOUT=150 MXATTN_BUILD=$B OUT=$L/b128 bash scripts/device.sh --bench > "$L/b128.log" 2>&1
stamp "bench D=128: $(grep '^## bench' "$L/b128.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/b128/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$P3\]/[persist3]/; s/\[$ONE\]/[one-wg]/" >> "$S"
BENCH_ARGS="--families int8-fp8 --dims 64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 7 --rep-ms 1400 --clocks" \
  EXTRA_ROWS="int8-fp8[$P4],int8-fp8[$S4]" BENCH_TIMEOUT=$((540 - SECONDS)) MXATTN_BUILD=$B OUT=$L/b64 bash scripts/device.sh --bench > "$L/b64.log" 2>&1
stamp "bench D=64: $(grep '^## bench' "$L/b64.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/b64/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$P4\]/[persist4]/; s/\[$S4\]/[shared4]/" >> "$S"
finish_call
exit 0
