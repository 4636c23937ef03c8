#!/usr/bin/env bash
# Prepares build-gpu/ for scripts/s12_first_call.sh: a copy of build-dev (built from main first)
# without object files or CPU test binaries, the template folders of main and branch
# int8-four-blocks, and that branch's gpu_int8_wgmma as tests/gpu_int8_wgmma_4b.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(git branch --show-current) == main ]] || { echo "s12_prepare: check out main first" >&2; exit 2; }
cmake --build build-dev -j8 > /dev/null
rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs -r sed -i 's#/build-dev#/build-gpu#g'
scripts/ab_templates.sh build-gpu main int8-four-blocks
wt=$(mktemp -d)
git worktree add -q "$wt" int8-four-blocks
cmake -S "$wt" -B "$wt/b" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$wt/b" -j8 --target gpu_int8_wgmma > /dev/null
cp "$wt/b/tests/gpu_int8_wgmma" build-gpu/tests/gpu_int8_wgmma_4b
git worktree remove --force "$wt" && git worktree prune
du -sh build-gpu
