#!/usr/bin/env bash
# Prepares build-gpu/ for scripts/s12_call2.sh: build-dev built from the checked-out branch
# (rowsum-mma), without object files or CPU test binaries, and a cubin of one
# ex2.approx.f16x2 for its SASS (cuobjdump is on the GPU machine only).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build-dev -j8 > /dev/null
rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs -r sed -i 's#/build-dev#/build-gpu#g'
src=$(mktemp --suffix=.cu)
cat > "$src" <<'CU'
extern "C" __global__ void ex2_f16x2(unsigned *x) {
  unsigned v = x[threadIdx.x], r;
  asm("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(v));
  x[threadIdx.x] = r;
}
CU
/usr/local/cuda/bin/nvcc -arch=sm_90a -cubin -o build-gpu/ex2_f16x2.cubin "$src"
rm -f "$src"
du -sh build-gpu
