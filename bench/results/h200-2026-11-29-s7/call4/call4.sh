#!/usr/bin/env bash
# Session 7, device call 4: branch deferred-output as it would land (built-in templates):
# gpu_wgmma, gpu_f16, gpu_tune; sanitizers on the deferred persistent kernel; the final bench.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
timeout 170 ctest --test-dir $B -R 'gpu_wgmma|gpu_f16|gpu_tune' -j3 -V --timeout 160 > $L/ctest.log 2>&1; rc=$?; echo "ctest rc=$rc" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
for args in "--seq-q 1100 --seq-k 900 --batch 2 --heads 4 --check-heads 4" "--seq 700 --batch 3 --heads 8 --kv-heads 2 --check-heads 8"; do
  echo "run $args: $(timeout 60 $B/mxattn run --family f16 --head-dim 128 $args --reps 3 2>&1 | grep -E 'kernel|error' | tr '\n' ' ')" >> $S
  for tool in memcheck racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 $args --reps 2 > $L/san.log 2>&1
    echo "  sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san.log | tr '\n' ' ')" >> $S
  done
done
if [ $rc = 0 ]; then
  timeout 280 python3 bench/attention.py --families "f16,int8-fp8" --dims 128,64 --seqs 1024,4096,16384 --causal both \
    --baselines sdpa-cudnn,sdpa-flash --rounds 3 --out $L/final > $L/final.log 2>&1; echo "bench final rc=$?" >> $S
fi
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
echo "== final"; grep -E "^\| " $L/final/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
