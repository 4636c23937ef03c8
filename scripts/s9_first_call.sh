#!/usr/bin/env bash
# A prepared first device call for the session after 2026-11-29-s8 (docs/status-2026-11-29-s8.md):
# where the int8-fp8 quantization pass spends its 300 us at D=128 N=4096 (ncu, full set), branch
# quant-split's pass checked bit for bit (gpu_int8 under its templates) and timed against main's,
# f16 D<=64's default by query length, branch split-knob's split=1 kernel checked and timed, then
# every GPU test on main.  The bench of the issue's shapes wants a second call, after any
# merge.  Prepare here (build-dev built from main), as bench/results/*/README.md describe:
#   rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
#   grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs sed -i 's#/build-dev#/build-gpu#g'
#   scripts/ab_templates.sh build-gpu main quant-split split-knob
# then run on the GPU machine with OUT set (the device tool sets it), carrying build-gpu:
#   bash scripts/s9_first_call.sh
# Budget: ~9.5 minutes.  Logs in $OUT/logs (tar'd to $OUT/logs.tgz), a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
MAIN=$B/tpl/main/templates SPLIT=$B/tpl/quant-split/templates KNOB=$B/tpl/split-knob/templates
for d in "$MAIN" "$SPLIT" "$KNOB"; do [ -d "$d" ] || { echo "missing $d: run scripts/ab_templates.sh first" | tee -a "$S"; exit 2; }; done
A="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32"
# 1. main's quantization and stats kernels under ncu: throughput, occupancy, stall reasons.
MXATTN_TEMPLATE_DIR=$MAIN timeout 120 ncu --set full --clock-control none -k regex:'_quant$|_stats$' -c 2 \
  -o "$L/quant" $B/mxattn run $A --reps 1 --check-heads 0 > "$L/ncu.log" 2>&1
echo "ncu rc=$?" >> "$S"
ncu --import "$L/quant.ncu-rep" --page details > "$L/quant_details.txt" 2>&1
grep -E "^  mxattn|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Theoretical Occ" \
  "$L/quant_details.txt" >> "$S"
# 2. quant-split: bit for bit (gpu_int8 compares the passes with numerics/), memcheck, kernel times, e2e.
MXATTN_TEMPLATE_DIR=$SPLIT timeout 150 $B/tests/gpu_int8 > "$L/gpu_int8_split.log" 2>&1
echo "gpu_int8 under quant-split rc=$? $(tail -1 "$L/gpu_int8_split.log")" >> "$S"
MXATTN_TEMPLATE_DIR=$SPLIT timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/mxattn run --family int8-fp8 \
  --head-dim 80 --seq-q 300 --seq-k 333 --batch 2 --heads 4 --kv-heads 2 --v-terms 2 --reps 1 --check-heads 0 > "$L/san.log" 2>&1
echo "memcheck quant-split rc=$? $(grep 'ERROR SUMMARY' "$L/san.log")" >> "$S"
for side in MAIN SPLIT; do
  MXATTN_TEMPLATE_DIR=${!side} timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'_quant$' -c 3 \
    $B/mxattn run $A --reps 2 --check-heads 0 > "$L/ncu_time_$side.log" 2>&1
  echo "$side quant us: $(grep -E "^ +gpu__time_duration" "$L/ncu_time_$side.log" | awk '{print $NF}' | tr '\n' ' ')" >> "$S"
done
for r in 1 2 3; do for side in MAIN SPLIT; do
  ms=$(MXATTN_TEMPLATE_DIR=${!side} timeout 60 $B/mxattn run $A --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
  echo "int8-fp8 D128 N4096 r$r $side ${ms:-failed}" >> "$S"
done; done
# 2b. f16 D<=64's default by query length (77c9d38, not yet run on a GPU): the plan path, its
#     checks against the CPU reference, and the 64-row default against 192-row blocks at short
#     queries (decoding, 1024 rows), where the choice was reasoned, not measured.
F192="variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=2"
for args in "--seq-q 1 --seq-k 4096 --batch 8 --heads 32 --kv-heads 8" "--seq 1024 --batch 4 --heads 32" "--seq 4096 --batch 4 --heads 32"; do
  echo "check f16 D64 $args: $(timeout 60 $B/mxattn run --family f16 --head-dim 64 $args --reps 2 --check-heads 2 2>&1 | grep -E '^config|^error|error:' | tr '\n' ' ')" >> "$S"
  for r in 1 2; do for side in default 192; do
    extra=(); [ $side = 192 ] && extra=(--config "$F192")
    ms=$(timeout 60 $B/mxattn run --family f16 --head-dim 64 $args --reps 100 --check-heads 0 "${extra[@]}" 2>&1 | awk '/^time/ {print $2, $5}')
    echo "f16 D64 $args r$r $side ${ms:-failed}" >> "$S"
  done; done
done
# 2c. Branch split-knob's kernel through its templates with an explicit split=1 (main's plans
#     pass no SM count, so its default stays split=0 here): checks against the CPU reference,
#     memcheck, and the small problem it is for against split=0 (prediction: +10%).
P="variant=wgmma q_regs=0 overlap=1 persistent=1 block_m=128 warps=12 block_n=128 stages=3"
for args in "--head-dim 128 --seq-q 300 --seq-k 3000 --batch 1 --heads 2" "--head-dim 64 --seq-q 130 --seq-k 1100 --batch 1 --heads 4 --kv-heads 2"; do
  echo "check split=1 $args: $(MXATTN_TEMPLATE_DIR=$KNOB timeout 60 $B/mxattn run --family f16 $args --config "$P split=1" --reps 3 --check-heads 4 2>&1 | grep -E '^error|error:' | tr '\n' ' ')" >> "$S"
done
MXATTN_TEMPLATE_DIR=$KNOB timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 \
  --seq-q 300 --seq-k 1500 --batch 1 --heads 2 --config "$P split=1" --reps 1 --check-heads 0 > "$L/san_split.log" 2>&1
echo "memcheck split=1 rc=$? $(grep 'ERROR SUMMARY' "$L/san_split.log")" >> "$S"
for r in 1 2 3; do for sp in 0 1; do
  ms=$(MXATTN_TEMPLATE_DIR=$KNOB timeout 60 $B/mxattn run --family f16 --head-dim 128 --seq 1024 --batch 1 --heads 8 --config "$P split=$sp" \
       --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
  echo "f16 D128 N1024 B1 H8 r$r split=$sp ${ms:-failed}" >> "$S"
done; done
# 3. Every GPU test on main (the speed lines skipped): the binaries themselves, not ctest (on a
#    warm machine, s8 calls 5-6, ctest in the carried build found no tests), correctness ones in
#    parallel, gpu_tune alone.  Exit 77 is a skip.
for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_int8_wgmma gpu_wgmma; do
  ( timeout 250 $B/tests/$t > "$L/$t.log" 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" >> "$S" ) &
done
wait
timeout 80 $B/tests/gpu_tune > "$L/gpu_tune.log" 2>&1
echo "gpu_tune rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_tune.log" | tail -1)" >> "$S"
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
