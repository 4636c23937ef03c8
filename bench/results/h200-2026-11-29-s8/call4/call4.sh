#!/usr/bin/env bash
# Session 8, call 4 (final): the bench beside SDPA flash and cuDNN (f16 D<=64 now 192-row blocks;
# int8-fp8 D>64 with fold_pv), then the GPU tests the session's changes touch, in parallel
# (correctness only: their speed lines are skipped), gpu_tune alone, and two sanitizers.
set -uo pipefail
B=build-gpu; L=$OUT/logs; mkdir -p $L; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
timeout 230 python3 bench/attention.py --families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both \
  --baselines sdpa-flash,sdpa-cudnn --rounds 2 --out $L/bench > $L/bench.log 2>&1
echo "bench rc=$?" >> $S
( cd $B && timeout 250 ctest -L gpu -R "gpu_driver|gpu_f16|gpu_wgmma|gpu_int8" -j5 --output-on-failure > $L/ctest_gpu.log 2>&1; echo "ctest gpu (driver f16 wgmma int8 int8_wgmma, -j5) rc=$?" >> $S )
( cd $B && timeout 80 ctest -R gpu_tune --output-on-failure > $L/ctest_tune.log 2>&1; echo "ctest gpu_tune rc=$?" >> $S )
for tool in memcheck synccheck; do
  timeout 30 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family int8-fp8 --head-dim 128 --seq-q 300 --seq-k 700 \
    --batch 1 --heads 2 --causal bottom-right --reps 1 --check-heads 0 > $L/san_$tool.log 2>&1
  echo "sanitize int8-fp8 D128 fold $tool rc=$? $(grep -E 'ERROR SUMMARY' $L/san_$tool.log)" >> $S
done
grep -E "tests passed|Passed|Failed|Skipped" $L/ctest_gpu.log $L/ctest_tune.log >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
python3 - $L/bench/results.json <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(r['family'].ljust(12), r['head_dim'], r['seq_len'], int(r['causal']), r['tops'], r.get('ratio_vs_cudnn'), r.get('error') or '')
PY
