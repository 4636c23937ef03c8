#!/usr/bin/env bash
# Session 17, call 2: branch quant-order (the quant kernel's blocks take every Q unit first,
# then the K/V windows from the last to the first across all heads, so that the first K/V
# blocks find in the L2 what the stats kernel read last).
#   1. gpu_int8 (the quant kernels bit for bit) and gpu_int8_wgmma on the branch;
#   2. `mxattn run` checks against the CPU at ragged shapes (Q longer and shorter than K, GQA,
#      fuse_q, int8-f16) and compute-sanitizer on two of them;
#   3. A/B, 3 rounds, the branch ("-") against main at issue #7's int8 shapes, N=1024, GQA;
#   4. torch.profiler kernel times with MXATTN_PDL=0 (no span includes a wait), both versions.
# Prediction (bench/NOTES.md, seventeenth session): the quant kernel 156 -> ~140 us at D=128
# N=4096 (~50 MB of its 268 MB of K/V reads from the L2), the call -0.5 to -1.5% at N=4096,
# -3 to -8% at N=1024 (K and V, 67 MB, mostly still in the L2), level at N=16384.
# ~6 min; timeout_s 480. Prepare: scripts/prepare_gpu_build.sh main; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 250 $B/tests/gpu_int8_wgmma --part 1/2 > "$L/gpu_int8_wgmma_1.log" 2>&1 &
timeout 250 $B/tests/gpu_int8_wgmma --part 2/2 > "$L/gpu_int8_wgmma_2.log" 2>&1 &
timeout 150 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1; r=$?
wait
stamp "gpu_int8 rc=$r $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')"
for p in 1 2; do stamp "gpu_int8_wgmma part $p: $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma_$p.log" | tr '\n' ' ')"; done
grep -hE "^FAIL|\[  FAILED" "$L"/gpu_int8*.log | head -8 >> "$S"
while IFS= read -r args; do
  timeout 60 $B/mxattn run $args --check-heads 2 --reps 2 > "$L/run.tmp" 2>&1
  stamp "run rc=$? $args | $(grep -E 'error|rel|FAIL|mismatch' "$L/run.tmp" | head -2 | tr -s ' ' | tr '\n' ' ')"
  cat "$L/run.tmp" >> "$L/runs.log"
done <<'RUNS'
--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 700 --batch 2 --heads 4 --kv-heads 2
--family int8-fp8 --head-dim 128 --seq-q 700 --seq-k 200 --batch 2 --heads 4 --kv-heads 2 --causal bottom-right
--family int8-fp8 --head-dim 64 --seq-q 333 --seq-k 1030 --batch 3 --heads 2 --config fuse_q=1
--family int8-fp8 --head-dim 96 --seq-q 1030 --seq-k 333 --batch 1 --heads 6 --kv-heads 3 --config variant=mma
--family int8-f16 --head-dim 128 --seq-q 500 --seq-k 900 --batch 2 --heads 4 --kv-heads 1
RUNS
sanitize_each "variant=wgmma" <<'RUNS'
block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 333 --batch 2 --heads 4 --kv-heads 2 --causal bottom-right
block_m=64 warps=4 block_n=128 stages=3 blocks_per_sm=4 fuse_q=1|--family int8-fp8 --head-dim 64 --seq-q 330 --seq-k 130 --batch 2 --heads 2 --kv-heads 1
RUNS
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 1024" "--head-dim 128 --seq 16384" \
         "--head-dim 128 --seq 4096 --causal bottom-right" "--head-dim 64 --seq 4096"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
runs+="--family int8-f16 --head-dim 128 --seq 4096 --batch 4 --heads 32"$'\n'
runs+="--family int8-fp8 --head-dim 128 --seq 8192 --batch 1 --heads 32 --kv-heads 8"
AB_ROUNDS=3 AB_TEMPLATES="- $B/tpl/main/templates" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=$runs \
  timeout 200 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
for tpl in "" "$B/tpl/main/templates"; do
  MXATTN_TEMPLATE_DIR=$tpl MXATTN_PDL=0 timeout 90 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 1024,4096 > "$L/profile.tmp" 2>&1
  stamp "profile (${tpl:-branch}) rc=$?"
  grep -v -i warn "$L/profile.tmp" >> "$S"; cat "$L/profile.tmp" >> "$L/profile.log"
done
finish_call
exit 0
