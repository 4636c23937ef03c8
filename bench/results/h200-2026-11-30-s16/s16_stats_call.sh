#!/usr/bin/env bash
# Session 16, call 5: branch stats-cluster (the stats kernel by clusters of 8 blocks a KV head,
# whole rows; build-gpu is the branch) against main, and combo (stats-cluster + kscale-smem).
#   1. gpu_int8 (the stats kernel's K means and V scales bit for bit, the quant kernels, PDL);
#   2. the kernels' own times, MXATTN_PDL=0 (torch.profiler), int8-fp8 D=128 N=4096;
#   3. sanitizers on a small ragged GQA case of each INT8 family (the whole plan);
#   4. A/B, 3 rounds: "-" vs main vs combo at int8-fp8 D=128 N=4096 / 16384, D=64 N=4096,
#      int8-f16 D=128 N=4096, and GQA int8-fp8 D=128 B=1 H=32 Hkv=8 N=8192.
# Prediction (bench/NOTES.md, sixteenth session): stats 80 -> 62-68 us at D=128 N=4096, the
# call -1.0 to -1.3% there, ~-0.3% at N=16384; combo a further -0.3% at D=128 and +5% at D=64.
# ~4 min; timeout_s 330; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 100 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1
stamp "gpu_int8 rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')"
grep -hE "^FAIL|\[  FAILED|kmean|vscale" "$L/gpu_int8.log" | head -8 >> "$S"
MXATTN_PDL=0 timeout 60 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 4096 > "$L/profile.log" 2>&1
stamp "profile rc=$?"
grep -E "ms  mxattn|events|fixed" "$L/profile.log" >> "$S"
sanitize_each "" <<'RUNS'
variant=wgmma|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
variant=mma|--family int8-f16 --head-dim 80 --seq-q 130 --seq-k 517 --batch 2 --heads 2 --kv-heads 1
RUNS
runs=""
for p in "int8-fp8 --head-dim 128 --seq 4096" "int8-fp8 --head-dim 128 --seq 16384" "int8-fp8 --head-dim 64 --seq 4096" \
         "int8-f16 --head-dim 128 --seq 4096"; do
  runs+="--family $p --batch 4 --heads 32"$'\n'
done
runs+="--family int8-fp8 --head-dim 128 --seq 8192 --batch 1 --heads 32 --kv-heads 8"
AB_ROUNDS=3 AB_TEMPLATES="- $B/tpl/main/templates $B/tpl/combo/templates" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=$runs \
  timeout $((320 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
finish_call
exit 0
