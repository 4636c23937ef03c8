#!/usr/bin/env bash
# Bounded fuzzing under ASan and UBSan, with libFuzzer from Debian's clang:
#   tests/fuzz/run.sh [BUILD_DIR]        (default build-fuzz)
# Builds the targets of tests/fuzz in BUILD_DIR (clang, -DMXATTN_FUZZ=ON),
# writes fresh seeds with the library, and runs each target for
# MXATTN_FUZZ_SECONDS (default 60), two at a time.  Fails on a crash, a
# sanitizer report, a broken property, a leak or a hang; the input that did
# it is kept in BUILD_DIR/fuzz-artifacts/ (reproduce: BUILD_DIR/tests/fuzz/fuzz_<target> FILE).
# Inputs that found new coverage accumulate in BUILD_DIR/fuzz-corpus/.
set -uo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-build-fuzz}
SECS=${MXATTN_FUZZ_SECONDS:-60}
JOBS=$(nproc 2>/dev/null || echo 2)
TARGETS=(problem config candidates import)

cmake -S . -B "$DIR" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMXATTN_FUZZ=ON \
      -DBUILD_TESTING=OFF >/dev/null || exit 1
cmake --build "$DIR" -j"$JOBS" --target fuzz_seeds "${TARGETS[@]/#/fuzz_}" >/dev/null || exit 1
F=$DIR/tests/fuzz
rm -rf "$DIR/fuzz-seeds" "$DIR/fuzz-artifacts"
mkdir -p "$DIR/fuzz-artifacts"
"$F/fuzz_seeds" "$DIR/fuzz-seeds" || exit 1

# The GCC sanitizer build's reason for intercept_tls_get_addr=0 holds for
# clang's runtime too (tests/CMakeLists.txt).
export ASAN_OPTIONS=${ASAN_OPTIONS:-intercept_tls_get_addr=0}

run_one() {  # target: runs it, leaves its log in $DIR/fuzz-<target>.log, returns its status
  local t=$1 extra=()
  [ "$t" = config ] && extra+=(-dict=tests/fuzz/config.dict)
  local corpora=("$DIR/fuzz-corpus/$t" "$DIR/fuzz-seeds/$t")
  [ -d "tests/fuzz/corpus/$t" ] && corpora+=("tests/fuzz/corpus/$t")
  mkdir -p "$DIR/fuzz-corpus/$t"
  # -timeout: one mxattn_candidates call for int8-fp8 takes ~15 s under ASan
  # on a loaded machine; a unit 8 times that is a hang.  The outer timeout
  # catches a run that never returns to libFuzzer's clock.
  timeout $((SECS + 300)) "$F/fuzz_$t" -max_total_time="$SECS" -timeout=120 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$DIR/fuzz-artifacts/$t-" "${extra[@]}" "${corpora[@]}" \
    >"$DIR/fuzz-$t.log" 2>&1
}

summary() {  # target status
  local log=$DIR/fuzz-$1.log
  local done; done=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1 inputs in \2 s/p' "$log" | tail -1)
  local cov; cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
  if [ "$2" -eq 0 ]; then
    echo "fuzz_$1: ok, ${done:-? inputs} (${cov})"
  else
    echo "fuzz_$1: FAILED (status $2); the end of $log:"
    grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)' "$log" | tail -40
    ls "$DIR"/fuzz-artifacts/"$1"-* 2>/dev/null | sed 's/^/  input: /'
  fi
}

failed=0 start=$SECONDS
for ((i = 0; i < ${#TARGETS[@]}; i += 2)); do
  pair=("${TARGETS[@]:i:2}") pids=()
  for t in "${pair[@]}"; do run_one "$t" & pids+=($!); done
  for j in "${!pair[@]}"; do
    wait "${pids[$j]}"; rc=$?
    summary "${pair[$j]}" "$rc"
    [ "$rc" -eq 0 ] || failed=1
  done
done
echo "fuzzing took $((SECONDS - start)) s"
exit $failed
