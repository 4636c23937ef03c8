#!/usr/bin/env bash
# Session 8, call 5: gpu_fp4 (the one GPU test not run this session; its kernels' PTX is unchanged
# since s5) and f16 D=128 N=4096 causal (0.985 of cuDNN in call 4) against three persistent tiles.
set -uo pipefail
B=build-gpu; L=$OUT/logs; mkdir -p $L; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
P="variant=wgmma q_regs=0 overlap=1 persistent=1 block_m=128 warps=12"
timeout 100 python3 bench/attention.py --families f16 --dims 128 --seqs 4096 --causal yes --baselines sdpa-cudnn --rounds 4 \
  --extra "f16[$P block_n=128 stages=2],f16[$P block_n=176 stages=2],f16[$P block_n=160 stages=2]" --out $L/bench > $L/bench.log 2>&1
echo "bench rc=$?" >> $S
( cd $B && timeout 110 ctest -R gpu_fp4 --output-on-failure > $L/ctest_fp4.log 2>&1; echo "ctest gpu_fp4 rc=$?" >> $S )
grep -E "Passed|Failed|Skipped" $L/ctest_fp4.log >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
python3 - $L/bench/results.json <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(r['family'].ljust(80), r['tops'], r.get('ratio_vs_cudnn'), r.get('round_ms'), r.get('error') or '')
PY
