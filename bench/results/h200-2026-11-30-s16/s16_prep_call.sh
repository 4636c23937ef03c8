#!/usr/bin/env bash
# Session 16, call 12: branch prep-queue (build-gpu is the branch): int8-fp8's two pre-passes as
# one queue of items, K/V windows right after their heads' statistics (L2 reuse).
#   1. gpu_int8 (the workspace bit for bit: every int8-fp8 case now through the prep kernel);
#   2. gpu_int8_wgmma '*lengths_and_causal*';
#   3. sanitizers (memcheck, racecheck, synccheck) on a small GQA case;
#   4. A/B 3 rounds, "-" vs main: int8-fp8 D=128 N=1024/4096/16384, causal 4096, D=64 N=4096/16384.
# Prediction (bench/NOTES.md): K and V's second DRAM read mostly gone: the passes 236 -> 170-200
# us at D=128 N=4096 (-2.5 to -4.5% end to end), -1% at N=16384. ~3 min; timeout_s 260.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 90 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1
stamp "gpu_int8 rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')"
grep -hE "^FAIL|mismatch" "$L/gpu_int8.log" | grep -v " 0 mismatches" | head -10 >> "$S"
timeout 40 $B/tests/gpu_int8_wgmma '*lengths_and_causal*' > "$L/gpu_int8_wgmma.log" 2>&1
stamp "gpu_int8_wgmma lengths rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma.log" | tr '\n' ' ')"
grep -hE "^FAIL" "$L/gpu_int8_wgmma.log" | head -4 >> "$S"
sanitize_each "" <<'RUNS'
variant=wgmma|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 1333 --batch 2 --heads 4 --kv-heads 2 --causal bottom-right
RUNS
runs=""
for p in "--head-dim 128 --seq 1024" "--head-dim 128 --seq 4096" "--head-dim 128 --seq 4096 --causal top-left" \
         "--head-dim 64 --seq 4096" "--head-dim 64 --seq 16384" "--head-dim 128 --seq 16384"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="- $B/tpl/main/templates" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout $((250 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
finish_call
exit 0
