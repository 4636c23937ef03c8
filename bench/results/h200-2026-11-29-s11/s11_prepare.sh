#!/usr/bin/env bash
# Prepares build-gpu/ for scripts/s11_first_call.sh (timing, tests): a copy of build-dev (built
# from main first) without object files or CPU test binaries, the template folders of main and
# the three waiting branches, the cubin whose SASS the timing call reads, and the
# int8-intra-overlap branch's gpu_int8_wgmma as tests/gpu_int8_wgmma_pipe.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build-dev -j8 > /dev/null
rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs -r sed -i 's#/build-dev#/build-gpu#g'
scripts/ab_templates.sh build-gpu main tma-issue-warp0~1 tma-issue-warp0 int8-intra-overlap pv-halves
mkdir -p build-gpu/sass
MXATTN_TEMPLATE_DIR=build-gpu/tpl/tma-issue-warp0/templates ./build-dev/mxattn compile --family int8-fp8 --head-dim 128 --ptx > /tmp/s11.ptx
/usr/local/cuda/bin/ptxas -arch=sm_90a /tmp/s11.ptx -o build-gpu/sass/int8fp8_d128.cubin
wt=$(mktemp -d)
git worktree add -q "$wt" int8-intra-overlap
cmake -S "$wt" -B "$wt/b" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$wt/b" -j8 --target gpu_int8_wgmma > /dev/null
cp "$wt/b/tests/gpu_int8_wgmma" build-gpu/tests/gpu_int8_wgmma_pipe
git worktree remove --force "$wt" && git worktree prune
du -sh build-gpu
