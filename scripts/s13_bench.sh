#!/usr/bin/env bash
# The next session's tune-and-bench call (~8 min; timeout_s 520, everything inside stops by 480 s;
# build-gpu: scripts/s13_prepare.sh on main). Session 12's tune was cut after 11 of 16 problems
# by the candidate enumeration (fixed in 9fc1096: ~2 s a problem's list again).
#   1. `mxattn tune` of f16 and int8-fp8 at the issue's shapes, 8 candidates each;
#   2. bench/attention.py on that database, 5 rounds, clocks logged, N=1024 included.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
tune_and_bench 330 480 5
finish_call
exit 0
