#!/usr/bin/env bash
# The session's bench call, after scripts/s12_first_call.sh's answer is merged (~6 min; timeout_s
# 480, everything inside stops by 440 s; build-gpu from main: scripts/s12_prepare.sh):
#   1. `mxattn tune` of f16 and int8-fp8 at the issue's shapes, 8 candidates each (s11: 226 s),
#      then f16 D=128 N=4096 non-causal again with 16 (0.976-1.001 of cuDNN over sessions 9-11);
#   2. bench/attention.py on that database, 5 rounds (s11's 3 took 33 s; cells within ~5% of a
#      target moved between runs), clocks logged, N=1024 included.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 260 $B/mxattn tune --family f16,int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both --batch 4 --heads 32 \
  --max-candidates 8 > "$L/tune.log" 2>&1
stamp "tune rc=$?"
timeout $((330 - SECONDS)) $B/mxattn tune --family f16 --head-dims 128 --seqs 4096 --causal none --batch 4 --heads 32 \
  --max-candidates 16 > "$L/tune_f16_d128.log" 2>&1
stamp "tune f16 D=128 N=4096 (16 candidates) rc=$?"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 5 --clocks" \
  BENCH_TIMEOUT=$((440 - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
finish_call
exit 0
