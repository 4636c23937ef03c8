#!/usr/bin/env bash
# Session 15: programmatic dependent launch of the INT8 families' quant and attention kernels.
# ~4 min, timeout_s 290. Prepare: scripts/prepare_gpu_build.sh; carry build-gpu.
#   1. gpu_int8 (the quant kernels bit for bit, now launched after stats with PDL; the attention
#      cases; test_pdl_matches_plain_launches: the same bits with and without);
#   2. gpu_int8_wgmma '*lengths_and_causal*' (the wgmma kernel's ragged and causal cases);
#   3. A/B (3 rounds) MXATTN_PDL=0 against the default at int8-fp8 D=128 N=1024/4096, D=64
#      N=4096, int8-f16 D=128 N=4096.
# Prediction (bench/NOTES.md, fifteenth session): two kernel boundaries a call overlap, 5-15 us
# each: -1 to -2% at N=4096, -5 to -10% at N=1024.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 100 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1
stamp "gpu_int8 rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')"
grep -hE "^FAIL|differ" "$L/gpu_int8.log" | head -8 >> "$S"
timeout 70 $B/tests/gpu_int8_wgmma '*lengths_and_causal*' > "$L/gpu_int8_wgmma.log" 2>&1
stamp "gpu_int8_wgmma lengths rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma.log" | tr '\n' ' ')"
grep -hE "^FAIL" "$L/gpu_int8_wgmma.log" | head -4 >> "$S"
runs=""
for p in "int8-fp8 --head-dim 128 --seq 1024" "int8-fp8 --head-dim 128 --seq 4096" "int8-fp8 --head-dim 64 --seq 4096" \
         "int8-f16 --head-dim 128 --seq 4096"; do
  runs+="--family $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="- env:MXATTN_PDL=0" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout $((275 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
finish_call
exit 0
