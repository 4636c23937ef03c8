#!/usr/bin/env bash
# Session 16, call 2: branch kscale-smem (int8-fp8 wgmma's K scales by a 16-byte bulk copy
# beside K8 and one shared load a thread; no fmaxf(-inf, x) in the row maximum).
#   1. SASS of main's, the branch's and br_pack's (the E4M3 pack as one asm) default kernels
#      at D=128 and D=64 (build-gpu/sass, compiled on the CPU machine);
#   2. A/B, 3 rounds: the branch ("-") against main and br_pack at int8-fp8 D=128 N=4096,
#      N=16384, N=4096 causal, D=64 N=16384;
#   3. sanitizers on the branch's kernel at small ragged sizes, D=128 and D=64 defaults;
#   4. gpu_int8_wgmma (both parts side by side) and gpu_int8 on the branch.
# Prediction (bench/NOTES.md, sixteenth session): the loop loses ~10 of 447 warp instructions
# a tile at D=128 (-1 to -2% time), more at D=64 (116 registers, was 128): -1 to -3%.
# ~5 min; timeout_s 400. Prepare: scripts/prepare_gpu_build.sh main (+ the sass/ and tpl/br_pack
# folders, see the session notes); carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
for c in "$B"/sass/*.cubin; do cuobjdump -sass "$c" > "$L/$(basename "$c" .cubin).sass" 2>&1; done
stamp "sass done"
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 128 --seq 4096 --causal top-left" "--head-dim 64 --seq 16384"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="- $B/tpl/main/templates $B/tpl/br_pack/templates" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout 150 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
sanitize_each "variant=wgmma" <<'RUNS'
block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
block_m=64 warps=4 block_n=128 stages=3 blocks_per_sm=4 rowsum_mma=1|--family int8-fp8 --head-dim 64 --seq-q 130 --seq-k 517 --batch 2 --heads 2 --kv-heads 1
RUNS
timeout 200 $B/tests/gpu_int8_wgmma --part 1/2 > "$L/gpu_int8_wgmma_1.log" 2>&1 &
timeout 200 $B/tests/gpu_int8_wgmma --part 2/2 > "$L/gpu_int8_wgmma_2.log" 2>&1 &
timeout 100 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1; r=$?
wait
stamp "gpu_int8 rc=$r $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')"
for p in 1 2; do stamp "gpu_int8_wgmma part $p: $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma_$p.log" | tr '\n' ' ')"; done
grep -hE "^FAIL|\[  FAILED" "$L"/gpu_int8*.log | head -8 >> "$S"
finish_call
exit 0
