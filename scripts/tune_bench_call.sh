#!/usr/bin/env bash
# A tune-and-bench device call (~8 min; timeout_s 520, everything inside stops by 480 s; build-gpu
# from scripts/prepare_gpu_build.sh on the revision to bench):
#   1. `mxattn tune` of f16 and int8-fp8 at issue #7's shapes, 8 candidates each;
#   2. bench/attention.py on that database, 5 rounds, clocks logged, N=1024 included.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
tune_and_bench 330 480 5
finish_call
exit 0
