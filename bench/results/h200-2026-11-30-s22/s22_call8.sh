#!/usr/bin/env bash
# Session 22, call 8, in a second machine start: issue #7's bench again (every shape, 7 rounds),
# to see whether calls 5-6's low ratios (int8-fp8 D=128 1.212-1.232x / 1.445-1.457x, our long rows
# at 1750-1818 MHz) belonged to that start.  The session's final code (cluster=1 PTX identical to
# calls 5-6's).  ~3 min plus the start; timeout_s 300; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,temperature.gpu --format=csv >> "$S" 2>&1
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=$((280 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench7 bash scripts/device.sh --bench > "$L/bench7.log" 2>&1
stamp "bench #7: $(grep '^## bench' "$L/bench7.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench7/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
cp "$L/bench7/bench/results.md" "$OUT/bench7_results.md" 2>/dev/null
finish_call
exit 0
