#!/usr/bin/env bash
# Session 18, call 6: the long-run ratio of int8-fp8 with the sampled smooth-K mean, as session
# 17's call 1 measured it (9 rounds, 1.5 s a row, clocks logged), at the three int8-fp8 targets.
# Prediction: D=128 N=4096 ~1.25x (session 17: 1.220x; our time -2.4%), N=16384 ~1.35x, D=64
# N=16384 ~1.34x.  ~2 min; timeout_s 140; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
BENCH_ARGS="--families int8-fp8 --dims 128,64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
  BENCH_TIMEOUT=110 MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-9 >> "$S"
finish_call
exit 0
