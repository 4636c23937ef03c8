#!/usr/bin/env bash
# Session 5, device call 6: the tuner's D=128 winner (192 keys, stages=2) beside the default under the benchmark's conditions, twice.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
PP='variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12'
F="f16,f16[$PP block_n=192 stages=2],f16[$PP persistent=1 block_n=192 stages=2],f16[$PP block_n=128 stages=3]"
for r in 1 2; do
  timeout 120 python3 bench/attention.py --families "$F" --dims 128 --seqs 4096,16384 --baselines sdpa-cudnn --out $L/bn192_$r > $L/bn192_$r.log 2>&1
  echo "bench $r rc=$?"
done
tar -czf $OUT/logs.tgz -C $OUT logs
for r in 1 2; do echo "== run $r"; grep -E "^\| " $L/bn192_$r/results.md | awk -F'|' '{print $2,$4,$5,$7,$8}'; done
