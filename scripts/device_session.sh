#!/usr/bin/env bash
# One device call for a session's verification: the GPU tests named in
# $TESTS (a ctest regex), compute-sanitizer on the newest kernels, the Python
# GPU tests, then the full benchmark; rows in $EXTRA_ROWS (FAMILY[knobs],
# comma-separated) join it only if the GPU tests passed, so a kernel that
# fails its test cannot hang the table.  Logs under $OUT; summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build}
OUT=${OUT:-/tmp/mxattn-out}
mkdir -p "$OUT/logs"
export MXATTN_LIB=$B/libmxattn.so PYTHONUNBUFFERED=1 MXATTN_CACHE=/tmp/mxattn-session.db
summary=()
note() { summary+=("$*"); echo "## $*"; }

timeout ${CTEST_TOTAL:-300} ctest --test-dir $B -R "${TESTS:-gpu_}" -V --timeout 250 > "$OUT/logs/ctest_gpu.log" 2>&1
tests_rc=$?
note "ctest -R '${TESTS:-gpu_}': rc=$tests_rc $(grep -E 'tests passed' "$OUT/logs/ctest_gpu.log")"
grep -E 'Test +#' "$OUT/logs/ctest_gpu.log"

if [[ -n "${SANITIZE_CONFIG:-}" ]]; then
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run ${SANITIZE_ARGS:-} \
      --config "$SANITIZE_CONFIG" --reps 1 > "$OUT/logs/sanitize_$tool.log" 2>&1
    note "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/sanitize_$tool.log" | tr '\n' ' ')"
  done
fi

timeout 120 python3 -m unittest discover -s python/tests -p 'test_gpu.py' > "$OUT/logs/pytest_gpu.log" 2>&1
note "python GPU tests rc=$? $(tail -1 "$OUT/logs/pytest_gpu.log")"

families="f16,int8-f16,int8-fp8,nvfp4,mxfp4,nvfp4-int8qk,f16[variant=mma]"
[[ $tests_rc == 0 && -n "${EXTRA_ROWS:-}" ]] && families="$families,$EXTRA_ROWS"
timeout ${BENCH_TIMEOUT:-300} python3 bench/attention.py --families "$families" --out "$OUT/bench" > "$OUT/logs/bench.log" 2>&1
note "bench rc=$? (families $families)"
tail -25 "$OUT/logs/bench.log"

cd "$OUT" && tar czf logs.tgz logs && rm -rf logs
echo; echo "==== summary"; printf '%s\n' "${summary[@]}"
