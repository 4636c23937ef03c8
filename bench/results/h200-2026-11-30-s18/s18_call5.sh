#!/usr/bin/env bash
# Session 18, call 5: gpu_int8 again (call 4's abort: the test wrote past q on a one-head
# Nq=20 case) and gpu_tune, on the session's last build.  ~2 min; timeout_s 200; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 170 ctest -R "gpu_int8$|gpu_tune" -j2 -V > "$L/ctest.log" 2>&1); r=$?
stamp "ctest gpu_int8 gpu_tune rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "Nk=1100|Nk=1031|Nk=150|FAIL" "$L/ctest.log" | cut -c1-220 >> "$S"
finish_call
exit 0
