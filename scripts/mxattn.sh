#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (CUDA toolkit at /usr/local/cuda):
#   scripts/mxattn.sh run    install what is missing, build, run the main job
#                            (tuning on a GPU; compile-only kernel cache fill without one)
#   scripts/mxattn.sh test   install what is missing, build, pass the tests
#                            (CPU tests, a sanitizer build of them, bounded fuzzing, and GPU
#                            tests where a GPU is)
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=$(nproc 2>/dev/null || echo 2)
BUILD=${MXATTN_BUILD_DIR:-build}

install_deps() {
  local need=()
  for pkg in build-essential cmake pkg-config liblua5.4-dev libsqlite3-dev libsodium-dev libcmocka-dev python3 python3-venv clang libclang-rt-14-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  [ ${#need[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "== installing: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
}

build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$JOBS"
}

have_gpu() { "$BUILD/mxattn" info 2>/dev/null | grep -qE '^gpu +[0-9]'; }

main_job() {
  if have_gpu; then
    echo "== tuning on this GPU (results in the database; see: $BUILD/mxattn query)"
    # The 48 likeliest candidates a shape (the default, its rivals, then by the
    # prior): each now settles for half a second first, so all ~300 a shape
    # would take ~10 minutes; `mxattn tune` without --max-candidates times all.
    "$BUILD/mxattn" tune --family f16 --head-dim 64,128 --seqs 4096 --max-candidates 48
  else
    echo "== no GPU here: filling the kernel cache for sm_90a ahead of time (compile-only)"
    "$BUILD/mxattn" tune --arch sm_90a --compile-only --family f16 --head-dim 64,128
  fi
  "$BUILD/mxattn" accuracy
}

run_tests() {
  # GPU tests first: without a GPU they all skip, and a log that ends on
  # "tests did not run" reads as if nothing was tested. The CPU suites,
  # which always run, come last so their summary is what a reader sees.
  echo "== GPU tests (each skips with a message where there is no GPU)"
  ctest --test-dir "$BUILD" -L gpu --output-on-failure
  echo "== fuzzing under ASan + UBSan (libFuzzer, ${MXATTN_FUZZ_SECONDS:-60} s a target, tests/fuzz/run.sh)"
  bash tests/fuzz/run.sh "$BUILD-fuzz"
  echo "== CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer"
  build "$BUILD-asan" -DMXATTN_SANITIZE=ON
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$BUILD-asan" -L cpu --output-on-failure -j"$JOBS"
  echo "== CPU tests"
  ctest --test-dir "$BUILD" -L cpu --output-on-failure -j"$JOBS"
}

case "${1:-}" in
  run)  install_deps; build "$BUILD"; main_job ;;
  test) install_deps; build "$BUILD"; run_tests ;;
  *)    echo "usage: $0 run|test" >&2; exit 2 ;;
esac
