#!/usr/bin/env bash
# Session 12's second device call (build-gpu from branch rowsum-mma, which holds main's
# blocks_per_sm=4 default at D<=64; scripts/s12_prepare_call2.sh). ~7 min; timeout_s 480,
# everything inside stops by 440 s.
#   1. gpu_int8_wgmma whole (its new test_rowsum_mma, and every other case with the new D<=64
#      default), then gpu_wgmma '*candidates*' (the default's knobs changed);
#   2. end to end A/B, 3 interleaved rounds: int8-fp8 default against rowsum_mma=1 on the same
#      tile at D=64 and D=128, N=4096 (causal both) and N=16384;
#   3. SASS of ex2.approx.f16x2 on sm_90a (build-gpu/ex2_f16x2.cubin): one MUFU or two?
# Prediction (bench/NOTES.md, "Twelfth session"): rowsum_mma -4 to -8% end to end at D=64,
# -3 to -6% at D=128 (64 of ~570 instructions a warp-tile off an issue-bound kernel).
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 230 $B/tests/gpu_int8_wgmma > "$L/gpu_int8_wgmma.log" 2>&1
stamp "gpu_int8_wgmma rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma.log" | tr '\n' ' ')"
grep -E "^FAIL" "$L/gpu_int8_wgmma.log" | head -5 >> "$S"
timeout 40 $B/tests/gpu_wgmma '*candidates*' > "$L/candidates.log" 2>&1
stamp "gpu_wgmma candidates rc=$? $(grep -E 'PASSED|FAILED' "$L/candidates.log" | tail -1)"
cuobjdump -sass $B/ex2_f16x2.cubin > "$L/ex2_f16x2.sass" 2>&1
stamp "ex2.approx.f16x2 SASS: $(grep -oE 'MUFU[.A-Z0-9]*|HADD2[.A-Z0-9]*|F2FP[.A-Z0-9]*|PRMT' "$L/ex2_f16x2.sass" | sort | uniq -c | tr '\n' ' ')"
cfg() { echo "--config 'variant=wgmma block_m=64 warps=4 block_n=128 $1 rowsum_mma=1'"; }
runs=""
for p in "--head-dim 64 --seq 4096" "--head-dim 64 --seq 4096 --causal top-left" "--head-dim 64 --seq 16384" \
         "--head-dim 128 --seq 4096" "--head-dim 128 --seq 4096 --causal top-left" "--head-dim 128 --seq 16384"; do
  prob=${p%%|*}
  case $prob in *"head-dim 64"*) k="stages=3 blocks_per_sm=4";; *) k="stages=2";; esac
  runs+="--family int8-fp8 $prob --batch 4 --heads 32"$'\n'
  runs+="--family int8-fp8 $prob --batch 4 --heads 32 $(cfg "$k")"$'\n'
done
AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout $((440 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
ab_best "$L/ab/ab.txt"
finish_call
exit 0
