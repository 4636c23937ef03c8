#!/usr/bin/env bash
# Session 14, call 8: pv_halves (P V as two column halves, the first folded under the second's
# MMAs): its GPU test, the sanitizers on two configs, then the A/B against the defaults.
# ~3 min, timeout_s 330. Prediction: the fold after the last P V MMA costs ~15% at D=128
# (call 7's ablation); half of it exposed: -5 to -7% at D=128 (fold_pv), ~0 to -3% at D=64
# (add_pv under a short P V).
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 120 $B/tests/gpu_int8_wgmma "*pv_halves*" > "$L/gpu_int8_wgmma_pv_halves.log" 2>&1
stamp "gpu_int8_wgmma pv_halves rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma_pv_halves.log" | tr '\n' ' ')"
grep -hE "^FAIL" "$L/gpu_int8_wgmma_pv_halves.log" | head -4 >> "$S"
sanitize_each "variant=wgmma" <<'RUNS'
pv_halves=1 block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
pv_halves=1 overlap=3 block_m=192 warps=12 block_n=128 stages=3|--family int8-fp8 --head-dim 48 --seq-q 130 --seq-k 257 --batch 2 --heads 2 --kv-heads 1
RUNS
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 64 --seq 16384" "--head-dim 128 --seq 4096 --causal top-left"; do
  d=$(echo $p | awk '{print $2}')
  [[ $d == 128 ]] && tile="stages=2" || tile="stages=3 blocks_per_sm=4"
  [[ $p == *causal* ]] && rs=0 || rs=1
  for h in 0 1; do
    runs+="--family int8-fp8 $p --batch 4 --heads 32 --config 'variant=wgmma block_m=64 warps=4 block_n=128 $tile rowsum_mma=$rs pv_halves=$h'"$'\n'
  done
done
AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} timeout $((310 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##; s#variant=wgmma block_m=64 warps=4 block_n=128 ##' >> "$S"
finish_call
exit 0
