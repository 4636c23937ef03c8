#!/usr/bin/env bash
# Session 8, call 7: the INT8 families' stats kernel with 32 warps a block (loads in flight)
# against HEAD's 8: gpu_int8 (the quantization passes bit for bit against numerics/), per-kernel
# times under ncu, and end-to-end A/B at int8-fp8 D=128 N=4096 B=4 H=32.
set -uo pipefail
B=build-gpu; L=$OUT/logs; mkdir -p $L; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db
OLD=$B/tpl/head/templates NEW=$B/tpl/new/templates
A="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32"
for side in OLD NEW; do
  MXATTN_TEMPLATE_DIR=${!side} timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:'stats|quant|int8' \
    -c 6 $B/mxattn run $A --reps 2 --check-heads 0 > $L/ncu_$side.log 2>&1
  echo "ncu $side rc=$?" >> $S
  grep -E "mxattn_int8|gpu__time_duration" $L/ncu_$side.log | paste - - | awk '{print "'$side'", $1, $(NF-1), $NF}' >> $S
done
for r in 1 2 3; do for side in OLD NEW; do
  ms=$(MXATTN_TEMPLATE_DIR=${!side} timeout 60 $B/mxattn run $A --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
  echo "int8 D128 N4096 r$r $side ${ms:-failed}" >> $S
done; done
timeout 120 $B/tests/gpu_int8 > $L/gpu_int8.log 2>&1; echo "gpu_int8 (new stats) rc=$? $(tail -1 $L/gpu_int8.log)" >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
