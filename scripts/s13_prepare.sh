#!/usr/bin/env bash
# Prepares build-gpu/ for the next session's device calls (scripts/s13_*.sh): build-dev built
# from the checked-out branch, without object files or CPU test binaries (a copy of
# bench/results/h200-2026-11-30-s12/s12_prepare_call2.sh without its cubin). Carry build-gpu.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build-dev -j8 > /dev/null
rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs -r sed -i 's#/build-dev#/build-gpu#g'
du -sh build-gpu
