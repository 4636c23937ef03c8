#!/usr/bin/env bash
# Session 23, call 2 (a second machine start): issue #7's tuner item at D=128 and a second bench
# reading.  `mxattn tune` of f16 and int8-fp8 at D=128, N=4096 and 16384, causal and not (4
# candidates each: the default and its three rivals by the prior), the database's winners
# (`mxattn query`), then the #7 bench on that database (D=128 tuned, D=64 defaults; 7 rounds,
# 1200 ms a row, clocks).  ~6.5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 330 $B/mxattn tune --family f16,int8-fp8 --head-dims 128 --seqs 4096,16384 --causal both \
  --batch 4 --heads 32 --max-candidates 4 > "$L/tune.log" 2>&1
stamp "tune rc=$?"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=$((560 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench7 bash scripts/device.sh --bench > "$L/bench7.log" 2>&1
stamp "bench #7 (tuned D=128): $(grep '^## bench' "$L/bench7.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench7/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
cp "$L/bench7/bench/results.md" "$OUT/bench7_results.md" 2>/dev/null
finish_call
exit 0
