#!/usr/bin/env bash
# Session 20, call 4: the shared ring with four consumers at D=64 (block_m=256 warps=16, 128
# registers: the same warps an SM as the D=64 default's four one-warpgroup blocks, a quarter of
# their L2-to-SM bytes).  Checks against the CPU reference and compute-sanitizer, then the bench
# beside cuDNN with the default and the three-consumer row.  Prediction: +3-6% at D=64 N=16384
# under the power cap (as three consumers gave D=128), level or slower at N=4096.
# ~6 min; timeout_s 500; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
SH4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1"
SH3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
while IFS='|' read -r cfg args; do
  for c in "" "$cfg"; do
    r=$(timeout 60 $B/mxattn run $args --reps 2 --check-heads 2 ${c:+--config "$c"} 2>&1 | grep -E "^error|fail" | tr -s ' ' | tr '\n' ' ')
    stamp "check [${c:-default}] $args | $r"
  done
done <<EOR
$SH4|--family int8-fp8 --head-dim 64 --seq 4096 --batch 1 --heads 4
$SH4|--family int8-fp8 --head-dim 64 --seq-q 1000 --seq-k 1300 --batch 2 --heads 4 --kv-heads 2 --causal bottom-right
$SH4|--family int8-fp8 --head-dim 48 --seq-q 300 --seq-k 777 --batch 1 --heads 3 --layout bnhd
EOR
sanitize_each "" <<EOR
$SH4|--family int8-fp8 --head-dim 64 --seq-q 450 --seq-k 700 --batch 1 --heads 2 --causal bottom-right
EOR
BENCH_ARGS="--families int8-fp8 --dims 64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1400 --clocks" \
  EXTRA_ROWS="int8-fp8[$SH4],int8-fp8[$SH3]" BENCH_TIMEOUT=$((480 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench bash scripts/device.sh --bench > "$L/bench.log" 2>&1
stamp "bench: $(grep '^## bench' "$L/bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/bench/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$SH4\]/[shared4]/; s/\[$SH3\]/[shared3]/" >> "$S"
finish_call
exit 0
