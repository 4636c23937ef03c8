#!/usr/bin/env bash
# Prepares build-gpu/ for a set's device calls: build-dev built from the checked-out
# revision, without object files or CPU test binaries (the carry limit is 64 MiB), its ctest
# files (DartConfiguration.tcl too: `ctest -V` reads it) pointed at build-gpu, and optionally the template folders of other revisions for an A/B
# (scripts/ab_templates.sh; AB_TEMPLATES then names build-gpu/tpl/REV/templates).
#   scripts/prepare_gpu_build.sh [REV ...]      then carry build-gpu
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build-dev -j8 > /dev/null
rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
grep -rl build-dev build-gpu --include=CTestTestfile.cmake --include=DartConfiguration.tcl | xargs -r sed -i 's#/build-dev#/build-gpu#g'
[[ $# -gt 0 ]] && scripts/ab_templates.sh build-gpu "$@"
du -sh build-gpu
