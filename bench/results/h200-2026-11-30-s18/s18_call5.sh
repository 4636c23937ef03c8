#!/usr/bin/env bash
# Session 18, call 5: gpu_int8 again (call 4's abort: the test wrote past q on a one-head
# Nq=20 case) and gpu_tune, on the session's last build.  ~2 min; timeout_s 200; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
# The test binaries directly: ctest -V read build-dev's DartConfiguration.tcl and found no tests
# there (the first try of this call).
timeout 170 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1 & p1=$!
timeout 170 $B/tests/gpu_tune > "$L/gpu_tune.log" 2>&1 & p2=$!
wait $p1; r1=$?; wait $p2; r2=$?
stamp "gpu_int8 rc=$r1: $(grep -E 'PASSED|FAILED' "$L/gpu_int8.log" | tr '\n' ' ') | gpu_tune rc=$r2: $(grep -E 'PASSED|FAILED' "$L/gpu_tune.log" | tr '\n' ' ')"
grep -E "Nk=1100|Nk=1031|Nk=150|FAIL" "$L/gpu_int8.log" | cut -c1-220 >> "$S"
finish_call
exit 0
