#!/usr/bin/env bash
# The "before" half of an A/B between two revisions on the GPU machine: builds
# REV's library (Release) in a scratch worktree and copies it, with the
# .so copies it loads beside it, its python/ package and its bench/ scripts
# (bench/attention.py replaced by this tree's), to build-gpu/NAME/ (default
# base), which travels with build-gpu.  Then, there:
#   AB_ARGS='--families f16,int8-fp8 --dims 64,128' scripts/gpu_suite.sh ab
# runs REV's bench/attention.py on REV's library and this tree's on this
# build, in turns, and compares them (bench/compare_runs.py --any-config
# --vs-cudnn --accuracy).  Run it after scripts/prepare_gpu_build.sh.
#   scripts/prepare_ab_base.sh REV [NAME]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 1 || $# -eq 2 ]] || { echo "usage: scripts/prepare_ab_base.sh REV [NAME]" >&2; exit 2; }
name=${2:-base}
[[ $name =~ ^[A-Za-z0-9_-]+$ ]] || { echo "prepare_ab_base: NAME is letters, digits, _ and -" >&2; exit 2; }
rev=$(git rev-parse --verify --quiet "$1^{commit}") || { echo "prepare_ab_base: no revision '$1'" >&2; exit 2; }
[[ -d build-gpu ]] || { echo "prepare_ab_base: run scripts/prepare_gpu_build.sh first" >&2; exit 2; }
scratch=${AB_BASE_DIR:-${TMPDIR:-/tmp}/mxattn-ab-base-${rev:0:12}}
if [[ ! -f "$scratch/build/libmxattn.so" ]]; then
  rm -rf "$scratch" && mkdir -p "$scratch"
  git archive "$rev" | tar -x -C "$scratch/"
  cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release > "$scratch/cmake.log"
  cmake --build "$scratch/build" -j"$(nproc)" --target mxattn_shared > "$scratch/build.log"
fi
dst=build-gpu/$name
rm -rf "$dst" && mkdir -p "$dst/build"
cp -a "$scratch"/build/*.so* "$dst/build/"
cp -a "$scratch/python" "$scratch/bench" "$scratch/include" "$dst/"
rm -rf "$dst/bench/results"
# Both halves are timed by this tree's bench script (one timer, one input
# draw: --seed), each over its own revision's Python package and library.
cp bench/attention.py "$dst/bench/attention.py"
echo "$rev" > "$dst/REVISION"
du -sh "$dst"
