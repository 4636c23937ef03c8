#!/usr/bin/env bash
# Session 16, call 9: branch kv-fused (build-gpu is the branch): Q quantized first, then K and V
# by one cluster kernel that reads them from DRAM once, for short heads.
#   1. gpu_int8 (the workspace bit for bit, each smooth-K case also on the kv plan);
#   2. gpu_int8_wgmma '*lengths_and_causal*' (attention on the kv plan at ragged lengths);
#   3. sanitizers on a small GQA case (the kv plan: lse off);
#   4. the kernels' own times (MXATTN_PDL=0) at int8-fp8 D=128 N=4096;
#   5. A/B 3 rounds, "-" vs main: int8-fp8 D=128 N=1024/4096, causal 4096, D=64 N=4096,
#      int8-f16 D=128 N=4096, and D=128 N=16384 (not fused: the control).
# Prediction (bench/NOTES.md): K and V's second DRAM read gone, the passes 240 -> 160-190 us at
# D=128 N=4096 (-3 to -5% end to end), more at N=1024; level at N=16384. ~4 min; timeout_s 300.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 120 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1
stamp "gpu_int8 rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')"
grep -hE "^FAIL|mismatch" "$L/gpu_int8.log" | grep -v " 0 mismatches" | head -12 >> "$S"
grep -c "steps=2.* 0 mismatches" "$L/gpu_int8.log" | sed 's/^/kv-plan quant cases ok: /' >> "$S"
timeout 60 $B/tests/gpu_int8_wgmma '*lengths_and_causal*' > "$L/gpu_int8_wgmma.log" 2>&1
stamp "gpu_int8_wgmma lengths rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma.log" | tr '\n' ' ')"
grep -hE "^FAIL" "$L/gpu_int8_wgmma.log" | head -4 >> "$S"
sanitize_each "" <<'RUNS'
variant=wgmma|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
variant=mma|--family int8-f16 --head-dim 80 --seq-q 130 --seq-k 517 --batch 2 --heads 2 --kv-heads 1
RUNS
MXATTN_PDL=0 timeout 40 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 4096 > "$L/profile.log" 2>&1
stamp "profile rc=$?"
grep -E "ms  mxattn|events" "$L/profile.log" >> "$S"
runs=""
for p in "int8-fp8 --head-dim 128 --seq 1024" "int8-fp8 --head-dim 128 --seq 4096" "int8-fp8 --head-dim 128 --seq 4096 --causal top-left" \
         "int8-fp8 --head-dim 64 --seq 4096" "int8-f16 --head-dim 128 --seq 4096" "int8-fp8 --head-dim 128 --seq 16384"; do
  runs+="--family $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="- $B/tpl/main/templates" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout $((290 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
finish_call
exit 0
