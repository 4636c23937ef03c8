#!/usr/bin/env bash
# Session 9, device call 2: the quantization pass with fewer instructions (HEAD) against the one
# before it (tpl/old), and with 6 blocks an SM (tpl/lb6: __launch_bounds__(128, 6), 64 bytes of
# spills at D=128); then every GPU test on HEAD's build (gpu_int8: the passes bit for bit;
# gpu_wgmma: the merged split-knob's split=1 cases).
# Prepare: build-gpu from build-dev (see s9_first_call.sh), then
#   scripts/ab_templates.sh build-gpu HEAD~1 HEAD; mv build-gpu/tpl/HEAD_1 build-gpu/tpl/old; mv build-gpu/tpl/HEAD build-gpu/tpl/new
#   cp -r build-gpu/tpl/new build-gpu/tpl/lb6; sed -i 's/__launch_bounds__(128) ${NAME}_quant/__launch_bounds__(128, 6) ${NAME}_quant/' build-gpu/tpl/lb6/templates/blocks/quant_kernels.lua
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
tpl() { echo "$B/tpl/$1/templates"; }
timed() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run "$@" --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}'; }
checked() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run "$@" --reps 2 --check-heads 4 2>&1 | grep -E '^config|^error|error:' | tr '\n' ' '; }
# 1. The quant kernel's time under ncu, each variant, D=128 and 64, int8-fp8 and int8-f16 at D=128.
for v in old new lb6; do
  for a in "int8-fp8 128" "int8-fp8 64" "int8-f16 128"; do set -- $a
    MXATTN_TEMPLATE_DIR=$(tpl $v) timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:'_quant$|_stats$' -c 4 \
      $B/mxattn run --family $1 --head-dim $2 --seq 4096 --batch 4 --heads 32 --reps 2 --check-heads 0 > "$L/ncu_${v}_$1_$2.log" 2>&1
    echo "$v $1 D$2 quant us/regs: $(grep -A8 '_quant' "$L/ncu_${v}_$1_$2.log" | grep -E 'gpu__time|registers' | awk '{print $NF}' | tr '\n' ' ')" >> "$S"
  done
done
MXATTN_TEMPLATE_DIR=$(tpl new) timeout 120 ncu --set full --clock-control none -k regex:'_quant$' -c 1 -o "$L/quant_new" \
  $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 > "$L/ncu_full.log" 2>&1
ncu --import "$L/quant_new.ncu-rep" --page details > "$L/quant_new_details.txt" 2>&1; rm -f "$L/quant_new.ncu-rep"
grep -E "Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Executed Instructions  " "$L/quant_new_details.txt" >> "$S"
# 2. End to end, 3 rounds, alternating.
A="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32"
for r in 1 2 3; do for v in old new lb6; do echo "int8-fp8 D128 N4096 r$r $v $(timed $(tpl $v) $A)" >> "$S"; done; done
for r in 1 2; do for v in old new; do echo "int8-fp8 D64 N4096 r$r $v $(timed $(tpl $v) --family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32)" >> "$S"; done; done
echo "check new: $(checked $(tpl new) --family int8-fp8 --head-dim 128 --seq 1000 --batch 2 --heads 4)" >> "$S"
echo "check old: $(checked $(tpl old) --family int8-fp8 --head-dim 128 --seq 1000 --batch 2 --heads 4)" >> "$S"
MXATTN_TEMPLATE_DIR=$(tpl new) timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/mxattn run --family int8-fp8 --head-dim 80 \
  --seq-q 300 --seq-k 333 --batch 2 --heads 4 --kv-heads 2 --v-terms 2 --reps 1 --check-heads 0 > "$L/san_quant.log" 2>&1
echo "memcheck new quant rc=$? $(grep 'ERROR SUMMARY' "$L/san_quant.log")" >> "$S"
# 3. Every GPU test on HEAD's build, correctness ones in parallel, gpu_tune alone.  Exit 77 is a skip.
for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_int8_wgmma gpu_wgmma; do
  ( timeout 280 $B/tests/$t > "$L/$t.log" 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" >> "$S" ) &
done
wait
timeout 80 $B/tests/gpu_tune > "$L/gpu_tune.log" 2>&1
echo "gpu_tune rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_tune.log" | tail -1)" >> "$S"
grep -E "^(FAIL|ok  )" "$L/gpu_int8.log" | head -20 >> "$S"
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
