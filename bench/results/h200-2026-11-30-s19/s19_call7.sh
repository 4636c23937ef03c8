#!/usr/bin/env bash
# Session 19, call 7: ncu's duration and DRAM bytes of each kernel of the four-kernel INT8 chain
# (stats, quant_q, quant_kv, attention) at issue #7's int8-fp8 shapes, B=4 H=32: where the call's
# time goes after the split.  ~1.5 min; timeout_s 240; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
for args in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 64 --seq 4096" "--head-dim 64 --seq 16384"; do
  timeout 60 ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum -c 4 \
    $B/mxattn run --family int8-fp8 $args --batch 4 --heads 32 --reps 1 --check-heads 0 < /dev/null > "$L/ncu.tmp" 2>&1
  cat "$L/ncu.tmp" >> "$L/ncu.log"
  stamp "$args: $(awk '/mxattn_int8/ {k=$1} /gpu__time_duration.sum/ {printf "%s %s %s; ", k, $NF, $(NF-1)} /dram__bytes_read.sum/ {printf "rd %s %s; ", $NF, $(NF-1)} /dram__bytes_write.sum/ {printf "wr %s %s | ", $NF, $(NF-1)}' "$L/ncu.tmp")"
done
finish_call
exit 0
