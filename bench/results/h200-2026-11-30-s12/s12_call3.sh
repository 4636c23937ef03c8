#!/usr/bin/env bash
# Session 12's bench call (build-gpu from main after rowsum-mma's merge: scripts/s12_prepare_call2.sh
# on main). ~9 min; timeout_s 560, everything inside stops by 530 s.
#   1. the GPU tests call 2 did not reach (gpu_int8_wgmma's v_terms and three_consumers, killed
#      by that call's timeout) and those that cover the new defaults (rowsum_mma=1 and
#      blocks_per_sm=4): gpu_int8_wgmma smoke, gqa; gpu_wgmma candidates;
#   2. `mxattn tune` of f16 and int8-fp8 at the issue's shapes, 8 candidates each;
#   3. bench/attention.py on that database, 3 rounds, clocks logged, N=1024 included.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
for f in '*v_terms*' '*three_consumers*' '*smoke*' '*gqa*'; do
  timeout 60 $B/tests/gpu_int8_wgmma "$f" >> "$L/gpu_int8_wgmma.log" 2>&1
  stamp "gpu_int8_wgmma $f rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma.log" | tail -1)"
  (( SECONDS > 110 )) && break
done
grep -E "^FAIL" "$L/gpu_int8_wgmma.log" | head -5 >> "$S"
timeout 45 $B/tests/gpu_wgmma '*candidates*' > "$L/candidates.log" 2>&1
stamp "gpu_wgmma candidates rc=$? $(grep -E 'PASSED|FAILED' "$L/candidates.log" | tail -1)"
grep '^#' "$L/candidates.log" >> "$S"
timeout $((430 - SECONDS)) $B/mxattn tune --family f16,int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both --batch 4 --heads 32 \
  --max-candidates 8 > "$L/tune.log" 2>&1
stamp "tune rc=$?"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 3 --clocks" \
  BENCH_TIMEOUT=$((530 - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
finish_call
exit 0
