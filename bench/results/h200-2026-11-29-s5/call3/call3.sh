#!/usr/bin/env bash
# Session 5, device call 3: the mma.sync staged epilogue and the unrolled stats kernel, beside HEAD's templates.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
OLD=$B/oldtpl/templates
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $L/env.txt
timeout 150 ctest --test-dir $B -R 'gpu_f16|gpu_int8$' -V --timeout 140 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $L/summary.txt
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $L/summary.txt
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $L/summary.txt
run_bench() { local name=$1; shift; timeout 150 python3 bench/attention.py "$@" --out $L/$name > $L/$name.log 2>&1; echo "bench $name rc=$?" >> $L/summary.txt; }
MMA="--families f16[variant=mma] --dims 128,64 --seqs 1024,4096 --baselines sdpa-flash"
run_bench mma_new $MMA
MXATTN_TEMPLATE_DIR=$OLD run_bench mma_old $MMA
run_bench mma_new2 $MMA
timeout 100 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 4096 > $L/profile_new.log 2>&1; echo "profile new rc=$?" >> $L/summary.txt
MXATTN_TEMPLATE_DIR=$OLD timeout 100 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 4096 > $L/profile_old.log 2>&1; echo "profile old rc=$?" >> $L/summary.txt
tar -czf $OUT/logs.tgz -C $OUT logs
cat $L/summary.txt
for f in mma_new mma_old mma_new2; do echo "== $f"; grep -E "^\| " $L/$f/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7}' ; done
echo "== profile new"; tail -12 $L/profile_new.log; echo "== profile old"; tail -12 $L/profile_old.log
