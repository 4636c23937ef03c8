#!/usr/bin/env bash
# Runs on the GPU machine over a carried build folder (built on Debian here).
# Steps, in this order, each only when its flag is given:
#   --tests    ctest -R "$TESTS" (default every gpu_ test)   -> $OUT/ctest_gpu.log
#   --sanitize compute-sanitizer memcheck, racecheck, synccheck on
#              `mxattn run $SANITIZE_ARGS --config "$SANITIZE_CONFIG"` -> $OUT/sanitize_*.log
#   --pytest   the Python binding's GPU tests                -> $OUT/pytest_gpu.log
#   --smoke    mxattn run on a few problems, SASS checks     -> $OUT/runs.txt
#   --tune     mxattn tune ($TUNE_ARGS)                       -> $OUT/runs.txt
#   --bench    bench/attention.py beside PyTorch SDPA        -> $OUT/bench/*
#              $EXTRA_ROWS (FAMILY[knobs], comma-separated) join the default
#              families only if --tests passed (or did not run), so a kernel
#              that fails its test cannot hang the table.
#   --model    bench/model_check.py (a model with each family) -> $OUT/model/*
#   --ab       template versions side by side: $AB_ROUNDS rounds (default 3), each
#              running every line of $AB_RUNS (`mxattn run` arguments, one
#              problem a line) under every folder of $AB_TEMPLATES (space-
#              separated; "-" is the built-in templates, "env:VAR=VALUE" them
#              with VAR set; scripts/ab_templates.sh makes folders from git
#              revisions) -> $OUT/ab.txt, medians in the summary
#   --kernel-times  ncu's duration and registers of the kernels matching $KT_KERNELS
#              (a regex, default '_quant_') in each line of $KT_RUNS (`mxattn run`
#              arguments) under each folder of $AB_TEMPLATES -> $OUT/kt_*.log, one
#              summary line each
# Tests come first so the later steps can depend on them.  $OUT returns at
# most 8 files (pack the logs into one file).  A short
# summary prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/mxattn-out}
mkdir -p "$OUT"
B=${MXATTN_BUILD:-build}
export MXATTN_CACHE=${MXATTN_CACHE:-/tmp/mxattn-device.db}
export MXATTN_LIB=$B/libmxattn.so PYTHONUNBUFFERED=1
summary=()
note() { summary+=("$*"); echo "## $*"; }
has() { [[ " $FLAGS " == *" $1 "* ]]; }
FLAGS="$*"
RUNS="$OUT/runs.txt"
tests_rc=0

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader; $B/mxattn info; } | tee -a "$RUNS"

if has --tests; then
  timeout ${CTEST_TOTAL:-280} ctest --test-dir $B -R "${TESTS:-gpu_}" -V --timeout ${CTEST_TIMEOUT:-250} > "$OUT/ctest_gpu.log" 2>&1
  tests_rc=$?
  note "ctest -R '${TESTS:-gpu_}': rc=$tests_rc $(grep -E 'tests passed|tests failed' "$OUT/ctest_gpu.log")"
  grep -E 'Test +#' "$OUT/ctest_gpu.log"
  grep -E '^[0-9]+: (FAIL|ERROR)' "$OUT/ctest_gpu.log" | head -20
  grep -E 'cold|warm' "$OUT/ctest_gpu.log" | head -6
fi

if has --sanitize; then
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run ${SANITIZE_ARGS:-} \
      --config "${SANITIZE_CONFIG:-}" --reps 1 > "$OUT/sanitize_$tool.log" 2>&1
    note "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitize_$tool.log" | tr '\n' ' ')"
  done
fi

if has --pytest; then
  timeout 120 python3 -m unittest discover -s python/tests -p 'test_gpu.py' > "$OUT/pytest_gpu.log" 2>&1
  note "python GPU tests rc=$? $(tail -3 "$OUT/pytest_gpu.log" | tr '\n' ' ')"
fi

if has --smoke; then
  $B/mxattn compile --family f16 --head-dim 128 --variant mma --cubin /tmp/mma.cubin > /dev/null &&
    note "SASS f16 mma d128: $(cuobjdump -sass /tmp/mma.cubin | grep -c HMMA) HMMA, $(cuobjdump -sass /tmp/mma.cubin | grep -cE 'LDL|STL') LDL/STL"
  $B/mxattn compile --family f16 --head-dim 128 --cubin /tmp/wg.cubin > /dev/null &&
    note "SASS f16 default(wgmma) d128: $(cuobjdump -sass /tmp/wg.cubin | grep -c HGMMA) HGMMA, $(cuobjdump -sass /tmp/wg.cubin | grep -cE 'UTMALDG') UTMALDG, $(cuobjdump -sass /tmp/wg.cubin | grep -cE 'LDL|STL') LDL/STL"
  for run in ${SMOKE_RUNS:-"--family f16 --head-dim 128 --seq 4096"}; do
    args=${run//,/ }
    $B/mxattn run $args --batch 4 --heads 32 > /tmp/run.txt 2>&1
    { echo "\$ mxattn run $args --batch 4 --heads 32"; cat /tmp/run.txt; } >> "$RUNS"
    note "run $args: $(grep -E '^config|^time|^error' /tmp/run.txt | tr -s ' ' | tr '\n' ' ')"
  done
fi

if has --tune; then
  $B/mxattn tune ${TUNE_ARGS:---family f16 --head-dims 64,128 --causal none --seqs 4096 --batch 4 --heads 32} >> "$RUNS" 2>&1
  note "tune rc=$?"
  $B/mxattn query >> "$RUNS" 2>&1
fi

if has --bench; then
  extra=()
  [[ -n "${EXTRA_ROWS:-}" && $tests_rc == 0 ]] && extra=(--extra "$EXTRA_ROWS")
  timeout ${BENCH_TIMEOUT:-330} python3 bench/attention.py "${extra[@]}" ${BENCH_ARGS:-} --out "$OUT/bench" > "$OUT/bench.log" 2>&1
  note "bench rc=$? ${extra[*]}"
  tail -30 "$OUT/bench.log"
fi

if has --model; then
  timeout ${MODEL_TIMEOUT:-120} python3 bench/model_check.py --out "$OUT/model" > "$OUT/model_check.log" 2>&1
  note "model_check rc=$?"
  tail -12 "$OUT/model_check.log"
fi

if has --ab; then
  # Interleaved (round, template, problem) so drift over the call cannot pick
  # a winner; each line of ab.txt: round, template, best and mean ms, problem.
  AB_FILE="$OUT/ab.txt"
  for round in $(seq "${AB_ROUNDS:-3}"); do
    for tpl in ${AB_TEMPLATES:--}; do
      while IFS= read -r args; do
        [[ -z "$args" ]] && continue
        dir=$tpl; envs=""; [[ $tpl == - ]] && dir=""
        [[ $tpl == env:* ]] && { dir=""; envs=${tpl#env:}; }   # built-in templates, env:VAR=VALUE set
        t=$(eval $envs MXATTN_TEMPLATE_DIR="$dir" timeout 120 $B/mxattn run $args --reps 50 --check-heads 0 2>&1 |
            awk '/^time/ {print $2, $5}')
        echo "$round $tpl ${t:-failed failed} $args" >> "$AB_FILE"
      done <<< "${AB_RUNS:---family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32}"
    done
  done
  while IFS= read -r line; do note "ab $line"; done < <(awk '{
      key = $2 " |"; for (i = 5; i <= NF; i++) key = key " " $i
      seen[key] = 1
      if ($3 != "failed") { n[key]++; v[key, n[key]] = $3 } else bad[key] = 1 }
    END { for (k in seen) { m = n[k]; if (!m) { printf "failed in every round: %s\n", k; continue }
                            for (i = 1; i <= m; i++) a[i] = v[k, i]
                          for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
                          printf "median best %.4f ms of %d rounds: %s%s\n", (m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2), m, k, (k in bad ? " (some rounds failed)" : "") } }' "$AB_FILE" | sort -t'|' -k2,2 -k1,1)
fi

if has --kernel-times; then
  n=0
  for tpl in ${AB_TEMPLATES:--}; do
    while IFS= read -r args; do
      [[ -z "$args" ]] && continue
      n=$((n + 1)); dir=$tpl; [[ $tpl == - ]] && dir=""
      MXATTN_TEMPLATE_DIR="$dir" timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread \
        -k regex:"${KT_KERNELS:-_quant_}" -c 2 $B/mxattn run $args --reps 1 --check-heads 0 < /dev/null > "$OUT/kt_$n.log" 2>&1
      note "kt $tpl | $args: us,regs $(grep -E 'gpu__time_duration|registers_per_thread' "$OUT/kt_$n.log" | awk '{print $NF}' | tr '\n' ' ')"
    done <<< "${KT_RUNS:---family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32}"
  done
fi

echo; echo "==== summary"; printf '%s\n' "${summary[@]}"
