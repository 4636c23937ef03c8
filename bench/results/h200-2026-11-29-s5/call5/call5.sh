#!/usr/bin/env bash
# Session 5, device call 5: gpu_fp4 again, the full benchmark (README table), accuracy on the GPU, a tuning run.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $L/env.txt
timeout 130 ctest --test-dir $B -R gpu_fp4 -V --timeout 120 > $L/ctest_fp4.log 2>&1; echo "ctest gpu_fp4 rc=$?" >> $L/summary.txt
grep -E "tests passed|tests failed" $L/ctest_fp4.log >> $L/summary.txt; grep -E "^[0-9]+: FAIL" $L/ctest_fp4.log >> $L/summary.txt
timeout 300 python3 bench/attention.py --extra 'int8-fp8[v_terms=2]' --out $L/final > $L/bench_final.log 2>&1; echo "bench final rc=$?" >> $L/summary.txt
timeout 60 $B/mxattn accuracy --gpu > $L/accuracy_gpu.txt 2>&1; echo "accuracy --gpu rc=$?" >> $L/summary.txt
timeout 90 $B/mxattn tune --family f16 --head-dims 128 --seqs 4096 --causal both --batch 4 --heads 32 --max-candidates 6 --db /tmp/tune.db > $L/tune.txt 2>&1; echo "tune rc=$?" >> $L/summary.txt
$B/mxattn query --db /tmp/tune.db >> $L/tune.txt 2>&1
tar -czf $OUT/logs.tgz -C $OUT logs
cat $L/summary.txt
grep -E "^\| (sdpa-flash|sdpa-cudnn|f16|f16\[variant=mma\]|int8-fp8) \| (64|128) " $L/final/results.md | awk -F'|' '{print $2,$3,$4,$5,$7,$8,$9,$10}'
tail -22 $L/tune.txt
