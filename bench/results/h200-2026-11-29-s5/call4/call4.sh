#!/usr/bin/env bash
# Session 5, device call 4: every GPU test on the final kernels, then the Python binding's GPU tests.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $L/env.txt
timeout 420 ctest --test-dir $B -L gpu -j4 -V --timeout 400 > $L/ctest_gpu.log 2>&1; echo "ctest -L gpu -j4 rc=$?" >> $L/summary.txt
grep -E "tests passed|tests failed|Test +#" $L/ctest_gpu.log >> $L/summary.txt
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest_gpu.log | head -20 >> $L/summary.txt
grep -E "cold|warm" $L/ctest_gpu.log | head -4 >> $L/summary.txt
timeout 150 python3 -m unittest discover -s python/tests -p 'test_gpu.py' > $L/pytest_gpu.log 2>&1
echo "python GPU tests rc=$? $(tail -3 $L/pytest_gpu.log | tr '\n' ' ')" >> $L/summary.txt
tar -czf $OUT/logs.tgz -C $OUT logs
cat $L/summary.txt
