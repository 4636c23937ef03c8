#!/usr/bin/env bash
# Session 6, device call 2: what runs between calls (the L2-clear effect), the causal
# persistent kernel vs the grid one in interleaved rounds, cuDNN's kernel under ncu.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
for args in "--seq 4096" "--seq 4096 --causal" "--seq 16384 --families f16"; do
  timeout 120 python3 bench/between_calls.py $args >> $L/between.txt 2>&1; echo "between $args rc=$?" >> $S
done
PP='variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12'
timeout 240 python3 bench/attention.py --families "f16,f16[$PP persistent=1 block_n=128 stages=3]" \
  --dims 128 --causal yes --baselines sdpa-cudnn --rounds 3 --out $L/causal > $L/causal.log 2>&1; echo "bench causal rc=$?" >> $S
timeout 200 python3 bench/attention.py --families "f16,int8-fp8" --dims 128 --seqs 4096 \
  --baselines sdpa-cudnn,sdpa-flash --rounds 3 --out $L/n4096 > $L/n4096.log 2>&1; echo "bench n4096 rc=$?" >> $S
cat > /tmp/sdpa3.py <<'PY'
import sys, torch, torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
be = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}[sys.argv[1]]
causal = len(sys.argv) > 2
q, k, v = (torch.randn(4, 32, 4096, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
with sdpa_kernel(be):
    for _ in range(3): F.scaled_dot_product_attention(q, k, v, is_causal=causal)
torch.cuda.synchronize()
PY
NCU="ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section ComputeWorkloadAnalysis"
for be in cudnn flash; do
  timeout 90 $NCU --launch-skip 2 --launch-count 1 -k "regex:^(?!.*(elementwise|fill|copy|reduce|distribution))" python3 /tmp/sdpa3.py $be > $L/ncu_$be.txt 2>&1
  echo "ncu $be rc=$?" >> $S
done
timeout 90 $NCU --launch-skip 2 --launch-count 1 $B/mxattn run --family f16 --head-dim 128 --batch 4 --heads 32 --seq 4096 --reps 3 --check-heads 0 > $L/ncu_mx.txt 2>&1; echo "ncu mx rc=$?" >> $S
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> $L/env.txt
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S; cat $L/between.txt | grep -v Warn
for f in causal n4096; do echo "== $f"; grep -E "^\| " $L/$f/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}' ; done
grep -hE "^  [a-zA-Z_].*\(|Duration|SM Frequency|Compute \(SM\) Throughput|Registers Per|Grid Size|Block Size" $L/ncu_*.txt | head -40
