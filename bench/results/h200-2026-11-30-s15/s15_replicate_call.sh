#!/usr/bin/env bash
# Session 15's second bench (a replicate of s15_bench_call.sh's, same build): the one tune whose
# winner is not the default (f16 D=64 causal N=4096, 1.02x in call 4), then the bench at 11 rounds
# and --rep-ms 1500 on the built-in defaults elsewhere. ~3 min; timeout_s 300.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 60 $B/mxattn tune --family f16 --head-dims 64 --seqs 4096 --causal top-left --batch 4 --heads 32 \
  --max-candidates 8 > "$L/tune.log" 2>&1
stamp "tune rc=$?"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 11 --rep-ms 1500 --clocks" \
  BENCH_TIMEOUT=$((270 - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
finish_call
exit 0
