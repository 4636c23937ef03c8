#!/usr/bin/env bash
# Session 6, device call 5: main with the persistent kernel as the causal default too:
# gpu_f16 and gpu_tune, then the bench of f16 and int8-fp8 (interleaved rounds).
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
timeout 130 ctest --test-dir $B -R 'gpu_f16|gpu_tune' -j2 -V --timeout 120 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
timeout 280 python3 bench/attention.py --families "f16,int8-fp8" --dims 128,64 --seqs 4096,16384 \
  --baselines sdpa-cudnn,sdpa-flash --rounds 2 --out $L/final > $L/final.log 2>&1; echo "bench final rc=$?" >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
echo "== final"; grep -E "^\| " $L/final/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
