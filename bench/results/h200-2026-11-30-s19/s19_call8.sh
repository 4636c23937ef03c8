#!/usr/bin/env bash
# Session 19, call 8: the GPU suite after the final review (nvfp4-int8qk's INT8 quantizer now
# calls the shared to_int8; gpu_fp4's INT8-ties test checks its codes bit for bit).
# ~3 min; timeout_s 280; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 240 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "ties|mismatch" "$L/ctest.log" | head -5 >> "$S"
finish_call
exit 0
