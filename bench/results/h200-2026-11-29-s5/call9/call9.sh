#!/usr/bin/env bash
# Session 5, device call 9: the tuner's confirmation round (default and best timed again at the end).
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so PYTHONUNBUFFERED=1
rm -f /tmp/t9.db
timeout 60 $B/mxattn tune --family f16 --head-dims 128 --seqs 4096 --causal both --batch 4 --heads 32 --max-candidates 6 --reps 50 --db /tmp/t9.db > $L/tune9.txt 2>&1
echo "tune rc=$?" >> $L/tune9.txt
python3 -c "
import sqlite3
c = sqlite3.connect('/tmp/t9.db')
for r in c.execute('select causal, config, status, median_ms, spread from measurements'): print(r)
" >> $L/tune9.txt 2>&1
MXATTN_CACHE=/tmp/mx.db timeout 100 ctest --test-dir $B -R gpu_tune -V --timeout 90 > $L/ctest_tune.log 2>&1; echo "ctest gpu_tune rc=$?" >> $L/tune9.txt
grep -E "tests passed|tests failed" $L/ctest_tune.log >> $L/tune9.txt
tar -czf $OUT/logs.tgz -C $OUT logs
tail -25 $L/tune9.txt
