#!/usr/bin/env bash
# Session 5, device call 1: GPU tests of the merged branches and the wide key tiles, then benches.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-dev
L=$OUT/logs; mkdir -p $L
export MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
OLD=$B/oldtpl/templates
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $L/env.txt
timeout 200 ctest --test-dir $B -R 'gpu_f16|gpu_int8$|gpu_wgmma' -V --timeout 190 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $L/summary.txt
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $L/summary.txt
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $L/summary.txt
BA="--baselines sdpa-flash,sdpa-cudnn"
run_bench() { local name=$1; shift; timeout 150 python3 bench/attention.py "$@" --out $L/$name > $L/$name.log 2>&1; echo "bench $name rc=$?" >> $L/summary.txt; }
run_bench int8_new --families int8-fp8 --dims 128,64 $BA
MXATTN_TEMPLATE_DIR=$OLD run_bench int8_old --families int8-fp8 --dims 128,64 $BA
run_bench mma_new --families 'f16[variant=mma]' --dims 64,128 --seqs 1024,4096 --baselines sdpa-flash
MXATTN_TEMPLATE_DIR=$OLD run_bench mma_old --families 'f16[variant=mma]' --dims 64,128 --seqs 1024,4096 --baselines sdpa-flash
PP='variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12'
run_bench bn128 --families "f16,f16[$PP block_n=176 stages=2],f16[$PP block_n=192 stages=2],f16[$PP block_n=160 stages=2],f16[$PP block_n=128 stages=2]" --dims 128 --seqs 4096,16384 --baselines sdpa-cudnn
W1='variant=wgmma q_regs=0 block_m=64 warps=4'
run_bench bn64 --families "f16,f16[$W1 block_n=192 stages=2],f16[$W1 block_n=176 stages=2],f16[$PP block_n=192 stages=2],f16[$PP block_n=128 stages=3]" --dims 64 --seqs 4096,16384 --baselines sdpa-cudnn
tar -czf $OUT/logs.tgz -C $OUT logs
cat $L/summary.txt
for f in int8_new int8_old mma_new mma_old bn128 bn64; do echo "== $f"; grep -E "^\| " $L/$f/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8,$9}' ; done
