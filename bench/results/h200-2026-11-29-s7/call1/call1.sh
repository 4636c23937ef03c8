#!/usr/bin/env bash
# Session 7, device call 1: pipe throughputs (MUFU, conversions), f16 D=64 ping-pong vs default,
# the tree row max (branch tree-max) vs main, ncu of f16 D=128 N=4096 and int8-fp8 D=128 N=16384 (MHA).
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
timeout 60 $B/micro/pipes > $L/pipes.txt 2>&1
cuobjdump -sass $B/micro/pipes | grep -oE "(MUFU|F2FP|I2F|F2F|HFMA2|FFMA)[A-Z0-9_.]*" | sort | uniq -c > $L/pipes_sass.txt
for c in $B/cubin/*.cubin; do cuobjdump -sass $c > $L/$(basename $c .cubin).sass 2>&1; done
PP="variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 persistent=1"
export AB_RUNS="--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32 --causal top-left
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --config '$PP block_n=128 stages=3'
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --config '$PP block_n=192 stages=2'
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --causal top-left
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --causal top-left --config '$PP block_n=128 stages=3'
--family f16 --head-dim 64 --seq 16384 --batch 4 --heads 32
--family f16 --head-dim 64 --seq 16384 --batch 4 --heads 32 --config '$PP block_n=128 stages=3'"
OUT=$L/ab MXATTN_BUILD=$B AB_ROUNDS=3 AB_TEMPLATES="- $B/tpl/tree-max/templates" timeout 300 scripts/device.sh --ab > $L/ab.log 2>&1
echo "ab rc=$?" >> $S
NCU="ncu --clock-control none --set full --import-source no"
timeout 90 $NCU -k regex:mxattn_f16 -c 1 -f -o $L/f16 $B/mxattn run --family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 > $L/ncu_f16.log 2>&1
echo "ncu f16 rc=$?" >> $S
timeout 90 $NCU -k regex:'mxattn_int8_fp8_d128_[0-9a-f]+$' -c 1 -f -o $L/i8 $B/mxattn run --family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32 --reps 1 --check-heads 0 > $L/ncu_i8.log 2>&1
echo "ncu i8 rc=$?" >> $S
for r in f16 i8; do
  ncu -i $L/$r.ncu-rep --page source --csv --print-source sass > $L/${r}_source.csv 2>&1
  ncu -i $L/$r.ncu-rep --page details > $L/${r}_details.txt 2>&1
  ncu -i $L/$r.ncu-rep --page raw --csv > $L/${r}_raw.csv 2>&1
done
rm -f $L/*.ncu-rep.bak
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S $L/pipes.txt $L/pipes_sass.txt
grep -E "^## ab|median" $L/ab.log | tail -20
grep -E "Duration|SM Frequency|Registers Per|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc A" $L/f16_details.txt $L/i8_details.txt | head -20
