#!/usr/bin/env bash
# Prepared device calls for the session after 2026-11-29-s8 (docs/status-2026-11-29-s8.md), two
# of them (one call may run 10 minutes):
#   measure (~7 min): where the int8-fp8 quantization pass spends its 300 us at D=128 N=4096
#     (ncu, full set); the waiting branches through their templates against main's: quant-split
#     (gpu_int8 bit for bit, memcheck, kernel time, end to end), split-knob's split=1 kernel
#     (checks, memcheck, the small problem it is for), int8-rowmax-i2f (checks, end to end); and
#     main's f16 D<=64 default by query length (not yet run on a GPU).
#   tests (~8 min): every GPU test on main's build, then the bench of the issue's shapes.
# Prepare here (build-dev built from main), as bench/results/*/README.md describe:
#   rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
#   grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs sed -i 's#/build-dev#/build-gpu#g'
#   scripts/ab_templates.sh build-gpu main quant-split split-knob int8-rowmax-i2f
# then on the GPU machine, with OUT set (the device tool sets it), carrying build-gpu:
#   bash scripts/s9_first_call.sh measure      and, in a second call,      bash scripts/s9_first_call.sh tests
# Logs in $OUT/logs (tar'd to $OUT/logs.tgz), a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-measure}
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
tpl() { echo "$B/tpl/$1/templates"; }
# One line of the A/B: best and mean ms of 100 launches under templates $1, arguments after.
timed() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run "$@" --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}'; }
checked() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run "$@" --reps 2 --check-heads 4 2>&1 | grep -E '^config|^error|error:' | tr '\n' ' '; }
memcheck() { local dir=$1 name=$2; shift 2
  MXATTN_TEMPLATE_DIR=$dir timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/mxattn run "$@" --reps 1 --check-heads 0 > "$L/san_$name.log" 2>&1
  echo "memcheck $name rc=$? $(grep 'ERROR SUMMARY' "$L/san_$name.log")" >> "$S"; }

measure() {
  local MAIN SPLIT KNOB I2F
  MAIN=$(tpl main) SPLIT=$(tpl quant-split) KNOB=$(tpl split-knob) I2F=$(tpl int8-rowmax-i2f)
  for d in "$MAIN" "$SPLIT" "$KNOB" "$I2F"; do [ -d "$d" ] || { echo "missing $d: run scripts/ab_templates.sh first" | tee -a "$S"; exit 2; }; done
  local A="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32"
  # 1. main's quantization and stats kernels under ncu: throughput, occupancy, stall reasons.
  MXATTN_TEMPLATE_DIR=$MAIN timeout 120 ncu --set full --clock-control none -k regex:'_quant$|_stats$' -c 2 \
    -o "$L/quant" $B/mxattn run $A --reps 1 --check-heads 0 > "$L/ncu.log" 2>&1
  echo "ncu rc=$?" >> "$S"
  ncu --import "$L/quant.ncu-rep" --page details > "$L/quant_details.txt" 2>&1
  grep -E "^  mxattn|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Theoretical Occ" \
    "$L/quant_details.txt" >> "$S"
  # 2. quant-split: bit for bit (gpu_int8 compares the passes with numerics/), memcheck, kernel time, e2e.
  MXATTN_TEMPLATE_DIR=$SPLIT timeout 150 $B/tests/gpu_int8 > "$L/gpu_int8_split.log" 2>&1
  echo "gpu_int8 under quant-split rc=$? $(tail -1 "$L/gpu_int8_split.log")" >> "$S"
  memcheck "$SPLIT" quant-split --family int8-fp8 --head-dim 80 --seq-q 300 --seq-k 333 --batch 2 --heads 4 --kv-heads 2 --v-terms 2
  local side r
  for side in MAIN SPLIT; do
    MXATTN_TEMPLATE_DIR=${!side} timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'_quant$' -c 3 \
      $B/mxattn run $A --reps 2 --check-heads 0 > "$L/ncu_time_$side.log" 2>&1
    echo "$side quant us: $(grep -E "^ +gpu__time_duration" "$L/ncu_time_$side.log" | awk '{print $NF}' | tr '\n' ' ')" >> "$S"
  done
  for r in 1 2 3; do for side in MAIN SPLIT; do
    echo "int8-fp8 D128 N4096 r$r $side $(timed ${!side} $A)" >> "$S"
  done; done
  # 2b. main's f16 D<=64 default by query length (77c9d38): the plan path, its checks, and the
  #     default against 192-row blocks at short queries, where the choice was reasoned.
  local F192="variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=2" args
  for args in "--seq-q 1 --seq-k 4096 --batch 8 --heads 32 --kv-heads 8" "--seq 1024 --batch 4 --heads 32" "--seq 4096 --batch 4 --heads 32"; do
    echo "check f16 D64 $args: $(checked "$MAIN" --family f16 --head-dim 64 $args)" >> "$S"
    for r in 1 2; do
      echo "f16 D64 $args r$r default $(timed "$MAIN" --family f16 --head-dim 64 $args)" >> "$S"
      echo "f16 D64 $args r$r 192 $(timed "$MAIN" --family f16 --head-dim 64 $args --config "$F192")" >> "$S"
    done
  done
  # 2c. split-knob's split=1 kernel (main's plans pass no SM count, so its default stays split=0
  #     here): checks, memcheck, and the small problem it is for against split=0 (prediction: +10%).
  local P="variant=wgmma q_regs=0 overlap=1 persistent=1 block_m=128 warps=12 block_n=128 stages=3"
  for args in "--head-dim 128 --seq-q 300 --seq-k 3000 --batch 1 --heads 2" "--head-dim 64 --seq-q 130 --seq-k 1100 --batch 1 --heads 4 --kv-heads 2"; do
    echo "check split=1 $args: $(checked "$KNOB" --family f16 $args --config "$P split=1")" >> "$S"
  done
  memcheck "$KNOB" split --family f16 --head-dim 128 --seq-q 300 --seq-k 1500 --batch 1 --heads 2 --config "$P split=1"
  for r in 1 2 3; do for sp in 0 1; do
    echo "f16 D128 N1024 B1 H8 r$r split=$sp $(timed "$KNOB" --family f16 --head-dim 128 --seq 1024 --batch 1 --heads 8 --config "$P split=$sp")" >> "$S"
  done; done
  # 2d. int8-rowmax-i2f (bit-identical by construction): checks, then e2e (prediction: +1-2%).
  echo "check i2f: $(checked "$I2F" --family int8-fp8 --head-dim 128 --seq 1000 --batch 2 --heads 4)" >> "$S"
  echo "check main: $(checked "$MAIN" --family int8-fp8 --head-dim 128 --seq 1000 --batch 2 --heads 4)" >> "$S"
  for r in 1 2 3; do for side in MAIN I2F; do
    echo "int8-fp8 D128 N16384 B1 H32 r$r $side $(timed ${!side} --family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32)" >> "$S"
  done; done
}

tests() {
  # 3. Every GPU test on main (the speed lines skipped): the binaries themselves, not ctest (on a
  #    warm machine, s8 calls 5-6, ctest in the carried build found no tests), correctness ones in
  #    parallel, gpu_tune alone.  Exit 77 is a skip.
  local t
  for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_int8_wgmma gpu_wgmma; do
    ( timeout 250 $B/tests/$t > "$L/$t.log" 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" >> "$S" ) &
  done
  wait
  timeout 80 $B/tests/gpu_tune > "$L/gpu_tune.log" 2>&1
  echo "gpu_tune rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_tune.log" | tail -1)" >> "$S"
  # 4. The issue's shapes beside SDPA flash and cuDNN.
  timeout 200 python3 bench/attention.py --families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both \
    --baselines sdpa-flash,sdpa-cudnn --rounds 2 --out "$L/bench" > "$L/bench.log" 2>&1
  echo "bench rc=$?" >> "$S"
}

case $MODE in
  measure) measure ;;
  tests) tests ;;
  *) echo "usage: bash scripts/s9_first_call.sh measure|tests" >&2; exit 2 ;;
esac
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
grep -E "^\| (f16|int8-fp8) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8
