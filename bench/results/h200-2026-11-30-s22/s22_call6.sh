#!/usr/bin/env bash
# Session 22, call 6.  Calls 2-3 timed the pair against a one-block ring that call 5 found 4-6%
# slow for its code's layout alone; the pair's text has since lost the stray `CLUSTER` global.
# (A) The pair against the restored one-block ring, 3 rounds (prediction: the pair 8-14% slower,
# as calls 2-3 imply against the fast ring).  (B) A second bench of the D=128 non-causal targets
# (call 5: f16 N=4096 0.977x, int8-fp8 1.212x / 1.445x) for the run-to-run spread.
# ~3 min; timeout_s 300; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
C3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
for round in 1 2 3; do
  for v in "one|$C3" "pair|$C3 cluster=2"; do
    IFS='|' read -r name cfg <<< "$v"
    for n in 4096 16384; do
      t=$(timeout 60 $B/mxattn run --family int8-fp8 --head-dim 128 --seq $n --batch 4 --heads 32 --reps $((n == 4096 ? 50 : 10)) --check-heads 0 --config "$cfg" 2>&1 | grep -E "^time" | tr -s ' ')
      stamp "round $round $name N=$n: $t"
    done
  done
done
BENCH_ARGS="--families f16,int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
  BENCH_TIMEOUT=$((280 - SECONDS)) MXATTN_BUILD=$B OUT=$L/b128 bash scripts/device.sh --bench > "$L/b128.log" 2>&1
stamp "bench D=128: $(grep '^## bench' "$L/b128.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/b128/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
cp "$L/b128/bench/results.md" "$OUT/b128_results.md" 2>/dev/null
finish_call
exit 0
