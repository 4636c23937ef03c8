#!/usr/bin/env bash
# Prepared device calls for the session after 2026-11-29-s9 (docs/status-2026-11-29-s9.md):
#   check (~7 min; run it with timeout_s 600): what s9 landed without a GPU, and one waiting branch:
#     - gpu_int8_wgmma against the p_fold reference (48d978c): the two seeds that failed in s9
#       (bases 1795988417 and 1795991000; their D=128 Nq=1 case should now read ~1e-4, not 2-4e-3;
#       the whole test runs in `tests`);
#     - gpu_tune and gpu_int8 on the q_bucket key (schema v3, b1fd14d);
#     - where the quant pass's instructions go: ncu source counters (SASS, executed instructions
#       per line) of branch quant-live-words' quant kernel (main's waste per value, found in its
#       PTX, is gone there), int8-fp8 D=128 N=4096 B=4 H=32, and that kernel's SASS;
#     - branch quant-live-words: gpu_int8 bit for bit under its templates, the quant kernel's time
#       (int8-fp8 D=64/128, int8-f16 D=64/128) against main's, end to end; its tip (LIVE,
#       quantize_rows<HAS_MEAN>) and the commit before (LIVE1) both, as their registers differ.
#   tests (~9 min): every GPU test binary on main, then the bench of the issue's shapes (if gpu_int8_wgmma
#     nears its 330 s, run the bench in a call of its own).
# Prepare here (build-dev built from main):
#   rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
#   rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl
#   grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs sed -i 's#/build-dev#/build-gpu#g'
#   scripts/ab_templates.sh build-gpu main quant-live-words quant-live-words~1
#   mkdir -p build-gpu/sass && MXATTN_TEMPLATE_DIR=build-gpu/tpl/quant-live-words/templates ./build-dev/mxattn compile \
#     --family int8-fp8 --head-dim 128 --ptx > /tmp/q.ptx && /usr/local/cuda/bin/ptxas -arch=sm_90a /tmp/q.ptx -o build-gpu/sass/int8fp8_d128.cubin
# then, carrying build-gpu:  bash scripts/s10_first_call.sh check   and   bash scripts/s10_first_call.sh tests
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-check}
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
tpl() { echo "$B/tpl/$1/templates"; }

check() {
  local MAIN LIVE LIVE1 base v
  MAIN=$(tpl main) LIVE=$(tpl quant-live-words) LIVE1=$(tpl quant-live-words_1)
  # 1. Timings first, on an idle GPU (~150 s): the quant pass's source counters, the branch's A/B.
  cuobjdump -sass $B/sass/int8fp8_d128.cubin > "$L/int8fp8_d128.sass" 2>&1
  MXATTN_TEMPLATE_DIR=$LIVE timeout 120 ncu --set full --import-source yes --clock-control none -k regex:'_quant$' -c 1 -o "$L/quant" \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 > "$L/ncu.log" 2>&1
  echo "ncu rc=$?" >> "$S"
  ncu --import "$L/quant.ncu-rep" --page source --print-source sass --csv > "$L/quant_source.csv" 2>&1
  echo "source page lines: $(wc -l < "$L/quant_source.csv")" >> "$S"
  rm -f "$L/quant.ncu-rep"
  # The quant kernel's time and registers, then end to end (interleaved rounds, medians), both
  # through scripts/device.sh.
  local runs=$'--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32\n--family int8-f16 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-f16 --head-dim 64 --seq 4096 --batch 4 --heads 32'
  AB_TEMPLATES="$MAIN $LIVE $LIVE1" KT_RUNS=$runs MXATTN_BUILD=$B OUT=$L/kt bash scripts/device.sh --kernel-times > "$L/kt.log" 2>&1
  grep '^## kt' "$L/kt.log" >> "$S"
  AB_TEMPLATES="$MAIN $LIVE $LIVE1" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab \
    AB_RUNS=$'--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-f16 --head-dim 64 --seq 4096 --batch 4 --heads 32' \
    bash scripts/device.sh --ab > "$L/ab.log" 2>&1
  grep '^## ab' "$L/ab.log" >> "$S"
  # 2. Correctness (~200 s): p_fold's replays (the whole gpu_int8_wgmma runs in `tests`), gpu_int8
  #    on main and under both branch forms, gpu_tune.
  for base in 1795988417 1795991000; do
    MXATTN_TEST_SEED=$base timeout 100 $B/tests/gpu_int8_wgmma test_head_dims > "$L/replay_$base.log" 2>&1
    echo "p_fold replay base $base rc=$? $(grep -E 'D=128 B=2 Hq=2 Hkv=2 Nq=1 ' "$L/replay_$base.log" | grep -oE '^(ok  |FAIL)|pipeline rel_l1 [0-9.e+-]+' | tr '\n' ' ')" >> "$S"
  done
  ( timeout 150 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1; echo "gpu_int8 rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_int8.log" | tail -1)" >> "$S"
    for v in LIVE LIVE1; do
      MXATTN_TEMPLATE_DIR=${!v} timeout 150 $B/tests/gpu_int8 > "$L/gpu_int8_$v.log" 2>&1
      echo "gpu_int8 under $v rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_int8_$v.log" | tail -1)" >> "$S"
    done
    timeout 80 $B/tests/gpu_tune > "$L/gpu_tune.log" 2>&1
    echo "gpu_tune rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_tune.log" | tail -1)" >> "$S" ) &
  wait
}

tests() {
  local t
  for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_int8_wgmma gpu_wgmma; do
    ( timeout 330 $B/tests/$t > "$L/$t.log" 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" >> "$S" ) &
  done
  wait
  timeout 80 $B/tests/gpu_tune > "$L/gpu_tune.log" 2>&1
  echo "gpu_tune rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_tune.log" | tail -1)" >> "$S"
  BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 2" \
    BENCH_TIMEOUT=230 MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
  grep '^## bench' "$L/device_bench.log" >> "$S"
}

case $MODE in
  check) check ;;
  tests) tests ;;
  *) echo "usage: bash scripts/s10_first_call.sh check|tests" >&2; exit 2 ;;
esac
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
grep -E "^\| (f16|int8-fp8) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8
exit 0
