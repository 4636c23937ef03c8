#!/usr/bin/env bash
# Session 16, call 6: the bench of issue #7's shapes on main (PDL since session 15's bench),
# nine rounds sharing 1.5 s of timing a row, N = 4096 and 16384 only, no tune first (the
# database is empty: every problem runs its heuristic default, which session 15's tune kept for
# int8-fp8 and all but one f16 shape). ~4 min; timeout_s 330; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
  BENCH_TIMEOUT=300 MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
finish_call
exit 0
