#!/usr/bin/env bash
# Session 7, device call 6: f16 D=64 tiles that share K/V between two consumer warpgroups (half the
# L2 -> SM traffic of the default 64-row blocks: ncu call 5, 131 vs 61 GB for cuDNN), beside the
# default and cuDNN in one bench.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
W="variant=wgmma q_regs=0 overlap=0"
timeout 200 python3 bench/attention.py --families f16 --dims 64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 3 \
  --extra "f16[$W block_m=128 warps=8 block_n=64 stages=3],f16[$W block_m=64 warps=4 block_n=64 stages=3],f16[$W block_m=128 warps=12 block_n=128 stages=2]" \
  --out $L/d64 > $L/d64.log 2>&1; echo "bench rc=$?"
tar -czf $OUT/logs.tgz -C $OUT logs
grep -E "^\| " $L/d64/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$6,$7,$8}'
tail -5 $L/d64.log
