#!/usr/bin/env bash
# Session 5, device call 8: every candidate's tuner measurement, with 15 compile threads and with 1.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export MXATTN_LIB=$B/libmxattn.so PYTHONUNBUFFERED=1
for th in 15 1; do
  rm -f /tmp/t_$th.db
  timeout 100 $B/mxattn tune --family f16 --head-dims 128 --seqs 4096 --causal none --batch 4 --heads 32 --max-candidates 6 --reps 50 --threads $th --db /tmp/t_$th.db > $L/tune_$th.txt 2>&1
  echo "== threads $th rc=$?" >> $L/tune_$th.txt
  python3 -c "
import sqlite3
c = sqlite3.connect('/tmp/t_$th.db')
for r in c.execute('select config, status, median_ms, spread from measurements'): print(r)
" >> $L/tune_$th.txt 2>&1
done
tar -czf $OUT/logs.tgz -C $OUT logs
for th in 15 1; do grep -E "^==|^\(" $L/tune_$th.txt; done
