#!/usr/bin/env bash
# Session 9, device call 3: the quant pass of HEAD (padding zeroed a word at a time, V's k test
# once a channel, six blocks an SM up to D=64) against call 2's (tpl/new1) and the one before
# (tpl/old): gpu_int8 bit for bit on HEAD's build, the kernel's time (ncu) at D=64 and 128, end to
# end; and the SASS of HEAD's quant kernel at D=128 (cubins made here with ptxas, in $B/sass).
# Prepare: build-gpu from build-dev; scripts/ab_templates.sh build-gpu <pre-s9 rev> <call-2 rev>,
# renamed tpl/old, tpl/new1; cubins: ptxas -arch=sm_90a of `mxattn compile --ptx` into build-gpu/sass.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
tpl() { [ "$1" = head ] && echo "" || echo "$B/tpl/$1/templates"; }
timed() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run "$@" --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}'; }
for f in $B/sass/*.cubin; do cuobjdump -sass "$f" > "$L/$(basename "$f" .cubin).sass" 2>&1; done
timeout 150 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1
echo "gpu_int8 rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_int8.log" | tail -1)" >> "$S"
for v in old new1 head; do
  for a in "int8-fp8 128" "int8-fp8 64" "int8-f16 64"; do set -- $a
    MXATTN_TEMPLATE_DIR=$(tpl $v) timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:'_quant$' -c 2 \
      $B/mxattn run --family $1 --head-dim $2 --seq 4096 --batch 4 --heads 32 --reps 2 --check-heads 0 > "$L/ncu_${v}_$1_$2.log" 2>&1
    echo "$v $1 D$2 quant us/regs: $(grep -A8 '_quant' "$L/ncu_${v}_$1_$2.log" | grep -E 'gpu__time|registers' | awk '{print $NF}' | tr '\n' ' ')" >> "$S"
  done
done
for r in 1 2; do for v in new1 head; do
  echo "int8-fp8 D128 N4096 r$r $v $(timed "$(tpl $v)" --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32)" >> "$S"
  echo "int8-fp8 D64 N4096 r$r $v $(timed "$(tpl $v)" --family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32)" >> "$S"
done; done
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
for f in "$L"/*.sass; do echo "$f: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$f") instructions"; done
