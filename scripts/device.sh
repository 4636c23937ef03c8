#!/usr/bin/env bash
# Runs on the GPU machine over a carried build folder (built on Debian here):
# GPU tests, a smoke run of each kernel, SASS checks and, with --bench, the
# side-by-side benchmark.  Logs go to $OUT; a short summary prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/mxattn-out}
mkdir -p "$OUT"
B=${MXATTN_BUILD:-build}
export MXATTN_CACHE=/tmp/mxattn-device.db
summary=()
note() { summary+=("$*"); echo "## $*"; }

# $OUT returns at most 8 files: keep to env.txt, ctest_gpu.log, runs.txt, bench.log, bench/*.
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader; $B/mxattn info; } | tee "$OUT/env.txt"

if [[ " $* " == *" --tests "* ]]; then
  ctest --test-dir $B -L gpu -V --timeout ${CTEST_TIMEOUT:-300} > "$OUT/ctest_gpu.log" 2>&1
  note "ctest -L gpu: rc=$? $(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log")"
  grep -E 'Test +#' "$OUT/ctest_gpu.log"
  grep -cE '^[0-9]+: ok ' "$OUT/ctest_gpu.log" | xargs -I{} echo "cases ok: {}"
  grep -E '^[0-9]+: FAIL' "$OUT/ctest_gpu.log" | head -20
fi

if [[ " $* " == *" --sass "* ]]; then
  $B/mxattn compile --family f16 --head-dim 128 --cubin /tmp/f16.cubin > /dev/null &&
    note "SASS f16 d128: $(cuobjdump -sass /tmp/f16.cubin | grep -cE 'HMMA') HMMA, $(cuobjdump -sass /tmp/f16.cubin | grep -cE 'LDL|STL') LDL/STL"
fi

if [[ " $* " == *" --smoke "* ]]; then
  for d in 64 128; do for c in none top-left; do
    $B/mxattn run --family f16 --head-dim $d --batch 4 --heads 32 --seq 4096 --causal $c --reps 20 > /tmp/run.txt 2>&1
    cat /tmp/run.txt >> "$OUT/runs.txt"
    note "run f16 d$d causal=$c: $(grep -E '^time|^error' /tmp/run.txt | tr -s ' ' | tr '\n' ' ')"
  done; done
fi

if [[ " $* " == *" --tune "* ]]; then
  $B/mxattn tune ${TUNE_ARGS:---family f16 --head-dims 64,128 --causal none --seqs 4096 --batch 4 --heads 32} > "$OUT/tune.txt" 2>&1
  note "tune rc=$?"
  grep -vE '^\s*\[|candidate' "$OUT/tune.txt" | tail -25
  $B/mxattn query >> "$OUT/tune.txt" 2>&1
fi

if [[ " $* " == *" --pytest "* ]]; then
  MXATTN_LIB=$B/libmxattn.so PYTHONUNBUFFERED=1 timeout 300 python3 -m unittest discover -s python/tests -p 'test_gpu.py' > "$OUT/pytest_gpu.log" 2>&1
  note "python GPU tests rc=$? $(tail -3 "$OUT/pytest_gpu.log" | tr '\n' ' ')"
fi

if [[ " $* " == *" --bench "* ]]; then
  MXATTN_LIB=$B/libmxattn.so PYTHONUNBUFFERED=1 python3 bench/attention.py ${BENCH_ARGS:-} --out "$OUT/bench" > "$OUT/bench.log" 2>&1
  note "bench rc=$?"
  tail -40 "$OUT/bench.log"
fi

echo; echo "==== summary"; printf '%s\n' "${summary[@]}"
