#!/usr/bin/env bash
# Prepares build-gpu/ for the next session's device calls (scripts/s13_*.sh): build-dev built
# from the checked-out branch (for s13_first_call.sh: int8-per-thread-kernels, which holds main),
# without object files or CPU test binaries, and the template folders of main and that branch
# for the A/B (scripts/ab_templates.sh). Carry build-gpu.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build-dev -j8 > /dev/null
rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs -r sed -i 's#/build-dev#/build-gpu#g'
scripts/ab_templates.sh build-gpu main int8-per-thread-kernels
du -sh build-gpu
