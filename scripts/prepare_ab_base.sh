#!/usr/bin/env bash
# The "before" half of an A/B between two revisions on the GPU machine: builds
# REV's library (Release) in a scratch worktree and copies it, with the
# .so copies it loads beside it, its python/ package and its bench/ scripts,
# to build-gpu/base/, which travels with build-gpu.  Then, there:
#   AB_ARGS='--families f16,int8-fp8 --dims 64,128' scripts/gpu_suite.sh ab
# runs REV's bench/attention.py on REV's library and this tree's on this
# build, in turns, and compares them (bench/compare_runs.py --any-config
# --vs-cudnn --accuracy).  Run it after scripts/prepare_gpu_build.sh.
#   scripts/prepare_ab_base.sh REV
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 1 ]] || { echo "usage: scripts/prepare_ab_base.sh REV" >&2; exit 2; }
rev=$(git rev-parse --verify --quiet "$1^{commit}") || { echo "prepare_ab_base: no revision '$1'" >&2; exit 2; }
[[ -d build-gpu ]] || { echo "prepare_ab_base: run scripts/prepare_gpu_build.sh first" >&2; exit 2; }
scratch=${AB_BASE_DIR:-${TMPDIR:-/tmp}/mxattn-ab-base-${rev:0:12}}
if [[ ! -f "$scratch/build/libmxattn.so" ]]; then
  rm -rf "$scratch" && mkdir -p "$scratch"
  git archive "$rev" | tar -x -C "$scratch/"
  cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release > "$scratch/cmake.log"
  cmake --build "$scratch/build" -j"$(nproc)" --target mxattn_shared > "$scratch/build.log"
fi
rm -rf build-gpu/base && mkdir -p build-gpu/base/build
cp -a "$scratch"/build/*.so* build-gpu/base/build/
cp -a "$scratch/python" "$scratch/bench" "$scratch/include" build-gpu/base/
rm -rf build-gpu/base/bench/results
echo "$rev" > build-gpu/base/REVISION
du -sh build-gpu/base
