#!/usr/bin/env bash
# The GPU machine's half of a release check, over a build folder carried from
# here (scripts/prepare_gpu_build.sh; carry build-gpu):
#   scripts/gpu_suite.sh tests   ctest -L gpu (every GPU test, eight at a time), logs kept
#   scripts/gpu_suite.sh bench   bench/overhead.py, then bench/attention.py beside SDPA
#                                ($BENCH_ARGS, and a second table with $BENCH2_ARGS)
#   scripts/gpu_suite.sh ab      bench/attention.py $AB_ARGS on the base revision's library
#                                (scripts/prepare_ab_base.sh) and on this build, in turns
#                                (base, new, base, new), then bench/compare_runs.py over the
#                                second pair (the first pair compiles and warms up); AB_PASSES=1
#                                runs one pair
# Logs and results go under $OUT; a short summary prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
OUT=${OUT:-/tmp/mxattn-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}  # cmocka, which the GPU machine lacks
export MXATTN_LIB=$PWD/$B/libmxattn.so MXATTN_CACHE=/tmp/mxattn-gpu-suite.db PYTHONUNBUFFERED=1
S=$OUT/summary.txt
note() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$S"; }
note "$(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader)"

case "${1:-}" in
tests)
  rm -f "$B"/Testing/Temporary/LastTest*.log
  timeout ${CTEST_TOTAL:-480} ctest --test-dir "$PWD/$B" -L gpu -j8 --timeout 460 --output-on-failure \
    > "$OUT/ctest_gpu.log" 2>&1
  note "ctest -L gpu rc=$?"
  grep -E "Test +#|tests passed|tests failed" "$OUT/ctest_gpu.log" >> "$S"
  cp "$B"/Testing/Temporary/LastTest.log "$OUT/ctest_gpu_full.log" 2>/dev/null
  ;;
bench)
  timeout 120 python3 bench/overhead.py --out "$OUT/overhead.json" > "$OUT/overhead.txt" 2>&1
  note "overhead rc=$?"; tail -20 "$OUT/overhead.txt" >> "$S"
  timeout ${BENCH_TIMEOUT:-400} python3 bench/attention.py ${BENCH_ARGS:-} --out "$OUT/bench" > "$OUT/bench.log" 2>&1
  note "bench rc=$? ${BENCH_ARGS:-}"
  grep -E "^\|" "$OUT/bench/results.md" 2>/dev/null | cut -d'|' -f2-11 >> "$S"
  if [ -n "${BENCH2_ARGS:-}" ]; then
    timeout ${BENCH2_TIMEOUT:-200} python3 bench/attention.py $BENCH2_ARGS --out "$OUT/bench2" > "$OUT/bench2.log" 2>&1
    note "bench2 rc=$? $BENCH2_ARGS"
    grep -E "^\|" "$OUT/bench2/results.md" 2>/dev/null | cut -d'|' -f2-11 >> "$S"
  fi
  ;;
ab)
  base=$PWD/$B/${AB_BASE:-base}   # AB_BASE: the folder prepare_ab_base.sh REV NAME wrote
  t=${AB_BASE:-base}
  [ -f "$base/REVISION" ] || { note "no $base: run scripts/prepare_ab_base.sh REV here first"; exit 2; }
  note "A/B: base $(cat "$base/REVISION") against $(git rev-parse HEAD 2>/dev/null || echo this tree)"
  passes=${AB_PASSES:-2}   # 1: one run each (every row warms up before it is timed)
  for pass in $(seq 1 "$passes"); do
    MXATTN_LIB=$base/build/libmxattn.so MXATTN_CACHE=/tmp/mxattn-ab-$t.db timeout ${AB_TIMEOUT:-200} \
      python3 "$base/bench/attention.py" ${AB_ARGS:-} --out "$OUT/ab-$t-$pass" > "$OUT/ab-$t-$pass.log" 2>&1
    note "base pass $pass rc=$?"
    MXATTN_CACHE=/tmp/mxattn-ab-new.db timeout ${AB_TIMEOUT:-200} \
      python3 bench/attention.py ${AB_ARGS:-} --out "$OUT/ab-$t-new-$pass" > "$OUT/ab-$t-new-$pass.log" 2>&1
    note "new pass $pass rc=$?"
  done
  python3 bench/compare_runs.py "$OUT/ab-$t-$passes/results.json" "$OUT/ab-$t-new-$passes/results.json" \
    --any-config --vs-cudnn --accuracy --md "$OUT/ab-$t.md" > "$OUT/ab-$t.txt" 2>&1
  note "compare rc=$?"; tail -3 "$OUT/ab-$t.txt" >> "$S"
  # $OUT brings back a few files only: the four runs travel as one archive.
  (cd "$OUT" && tar czf "ab-$t-runs.tgz" ab-"$t"-?/ ab-"$t"-new-?/ ab-"$t"-*.log && rm -rf ab-"$t"-?/ ab-"$t"-new-?/ ab-"$t"-*.log)
  ;;
*) echo "usage: $0 tests|bench|ab" >&2; exit 2 ;;
esac
echo "==== summary"; cat "$S"
