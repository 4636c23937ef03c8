#!/usr/bin/env bash
# Session 5, device call 7: why the tuner's 192-key winner (1.78 ms) is not the benchmark's (1.97 ms).
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
PP='variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12'
for c in "$PP persistent=1 block_n=128 stages=3" "$PP block_n=192 stages=2" "$PP block_n=128 stages=3" "$PP persistent=1 block_n=192 stages=2"; do
  echo "== mxattn run [$c]" >> $L/runs.txt
  timeout 60 $B/mxattn run --family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32 --config "$c" --reps 50 >> $L/runs.txt 2>&1
done
timeout 120 $B/mxattn tune --family f16 --head-dims 128 --seqs 4096 --causal none --batch 4 --heads 32 --max-candidates 6 --reps 50 --fresh --db /tmp/tune2.db > $L/tune2.txt 2>&1
echo "tune rc=$?" >> $L/runs.txt
tar -czf $OUT/logs.tgz -C $OUT logs
grep -E "^==|^config|^time|^error" $L/runs.txt; tail -6 $L/tune2.txt
