#!/usr/bin/env bash
# Session 18, call 4: smooth-K's mean from every 8th key (INT8 families, N >= 1024).
# Prediction: the stats pass reads 7/8 of K less: at D=128 N=4096 B=4 H=32 268 -> 151 MB,
# 80 -> ~45 us, the call -30 to -35 us (-2.3%); N=16384 354 -> ~200 us (-0.8%); D=64 N=16384
# 136 -> ~80 us (-0.4%).
#  1. ctest gpu_int8 and gpu_int8_wgmma (K means bit for bit incl. two 1024+ key cases);
#  2. A/B before (tpl/HEAD_1) and after, 3 rounds; ncu's stats-kernel time for both;
#  3. bench/attention.py int8-fp8 beside SDPA cuDNN (the ratios of issue #7).
# ~6 min; timeout_s 480; carry build-gpu (prepared with scripts/prepare_gpu_build.sh HEAD~1).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
OLD=$B/tpl/HEAD_1/templates
stamp start
(cd $B && timeout 200 ctest -R "gpu_int8" -j3 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest gpu_int8* rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "^FAIL|kmean" "$L/ctest.log" | cut -c1-300 | head -5 >> "$S"
export AB_TEMPLATES="$OLD -" AB_ROUNDS=3 AB_RUNS="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32
--family int8-fp8 --head-dim 64 --seq 16384 --batch 1 --heads 32
--family int8-f16 --head-dim 128 --seq 4096 --batch 4 --heads 32"
export KT_KERNELS='_stats$' KT_RUNS="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32"
MXATTN_BUILD=$B OUT=$L/ab timeout 150 bash scripts/device.sh --ab --kernel-times > "$L/ab.log" 2>&1
stamp "ab rc=$?"; grep -E "^## (ab|kt) " "$L/ab.log" | sed 's/^## //' >> "$S"
BENCH_ARGS="--families int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 3 --rep-ms 300" \
  BENCH_TIMEOUT=150 MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-9 >> "$S"
finish_call
exit 0
