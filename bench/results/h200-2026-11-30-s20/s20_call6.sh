#!/usr/bin/env bash
# Session 20, call 6: the session's last kernel code (the shared ring the default for int8-fp8
# without a mask and with long rows; the persistent form off main).  The GPU suite with the new
# gpu_int8_wgmma test_shared_ring, then every #7 shape beside cuDNN and flash.
# ~6 min; timeout_s 420; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 230 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "shared_ring|FAIL" "$L/ctest.log" | head -20 >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn,sdpa-flash --rounds 5 --rep-ms 1000 --clocks" \
  BENCH_TIMEOUT=$((400 - SECONDS)) MXATTN_BUILD=$B OUT=$L/full bash scripts/device.sh --bench > "$L/full.log" 2>&1
stamp "full: $(grep '^## bench' "$L/full.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn|sdpa-flash) " "$L/full/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 >> "$S"
finish_call
exit 0
