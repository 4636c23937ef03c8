#!/usr/bin/env bash
# A prepared first device call for the session after 2026-11-29-s8 (docs/status-2026-11-29-s8.md):
# where the int8-fp8 quantization pass spends its 300 us at D=128 N=4096 (ncu, full set), the
# whole GPU test suite on the tree as it is, and the bench of the issue's shapes.
# Prepare here (build-dev built from this tree), as bench/results/*/README.md describe:
#   rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
#   grep -rl build-dev build-gpu --include=CTestTestfile.cmake | xargs sed -i 's#/build-dev#/build-gpu#g'
# then run on the GPU machine with OUT set (the device tool sets it), carrying build-gpu:
#   bash scripts/s9_first_call.sh
# Budget: ~8 minutes.  Logs in $OUT/logs (tar'd to $OUT/logs.tgz), a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
A="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32"
# 1. The quantization and stats kernels under ncu: throughput, occupancy, stall reasons.
timeout 120 ncu --set full --clock-control none -k regex:'_quant$|_stats$' -c 2 -o "$L/quant" \
  $B/mxattn run $A --reps 1 --check-heads 0 > "$L/ncu.log" 2>&1
echo "ncu rc=$?" >> "$S"
ncu --import "$L/quant.ncu-rep" --page details > "$L/quant_details.txt" 2>&1
grep -E "^  mxattn|Duration|Memory Throughput|DRAM Throughput|Achieved Occupancy|Registers Per|Theoretical Occ" \
  "$L/quant_details.txt" >> "$S"
# 2. Every GPU test (the speed lines skipped), correctness in parallel, gpu_tune alone.
( cd $B && timeout 300 ctest -L gpu -E gpu_tune -j6 --output-on-failure > "$L/ctest_gpu.log" 2>&1; echo "ctest gpu rc=$?" >> "$S" )
( cd $B && timeout 90 ctest -R gpu_tune --output-on-failure > "$L/ctest_tune.log" 2>&1; echo "ctest gpu_tune rc=$?" >> "$S" )
grep -hE "Test +#.*(Passed|Failed|Skipped)|No tests were found" "$L/ctest_gpu.log" "$L/ctest_tune.log" >> "$S"
# 3. The issue's shapes beside SDPA flash and cuDNN.
timeout 200 python3 bench/attention.py --families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both \
  --baselines sdpa-flash,sdpa-cudnn --rounds 2 --out "$L/bench" > "$L/bench.log" 2>&1
echo "bench rc=$?" >> "$S"
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
grep -E "^\| (f16|int8-fp8) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8
