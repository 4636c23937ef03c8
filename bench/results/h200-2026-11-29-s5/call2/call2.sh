#!/usr/bin/env bash
# Session 5, device call 2: persistent f16 kernel tests + sanitizer, benches.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $L/env.txt
timeout 150 ctest --test-dir $B -R 'gpu_wgmma' -V --timeout 140 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $L/summary.txt
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $L/summary.txt
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $L/summary.txt
PSC="variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 persistent=1 block_n=128 stages=2"
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 --batch 12 --heads 4 \
    --seq-q 300 --seq-k 200 --causal bottom-right --config "$PSC" --reps 1 > $L/sanitize_$tool.log 2>&1
  echo "sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/sanitize_$tool.log | tr '\n' ' ')" >> $L/summary.txt
done
BA="--baselines sdpa-flash,sdpa-cudnn"
run_bench() { local name=$1; shift; timeout 200 python3 bench/attention.py "$@" --out $L/$name > $L/$name.log 2>&1; echo "bench $name rc=$?" >> $L/summary.txt; }
PP='variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12'
run_bench p128 --families "f16,f16[$PP persistent=1 block_n=176 stages=2],f16[$PP persistent=1 block_n=128 stages=3],f16[$PP block_n=128 stages=3]" --dims 128 $BA
run_bench p64 --families "f16,f16[$PP persistent=1 block_n=128 stages=3],f16[$PP persistent=1 block_n=192 stages=2]" --dims 64 --seqs 4096,16384 --baselines sdpa-cudnn
M='variant=mma q_regs=0'
run_bench mma --families "f16[variant=mma],f16[$M block_m=128 warps=4 block_n=32 stages=2],f16[$M block_m=128 warps=4 block_n=32 stages=3],f16[variant=mma q_regs=1 block_m=64 warps=4 block_n=32 stages=3],f16[$M block_m=64 warps=4 block_n=64 stages=2],f16[variant=mma q_regs=1 block_m=128 warps=8 block_n=64 stages=2]" --dims 128 --seqs 1024,4096 --baselines sdpa-flash
tar -czf $OUT/logs.tgz -C $OUT logs
cat $L/summary.txt
for f in p128 p64 mma; do echo "== $f"; grep -E "^\| " $L/$f/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}' ; done
