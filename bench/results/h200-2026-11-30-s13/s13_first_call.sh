#!/usr/bin/env bash
# The first device call after session 12 (docs/status-2026-11-30-s12.md); ~8.5 min, timeout_s
# 540, everything inside stops by 500 s. Prepare here: git checkout int8-per-thread-kernels &&
# bash scripts/s13_prepare.sh; carry build-gpu. The branch holds main plus int8-fp8's
# SageAttention2 per-thread INT8 groups (quant kernels, both attention variants, the reference),
# not yet run on a GPU.
#   1. every GPU test binary of the branch build, side by side (gpu_int8's bit-exact check of the
#      new quantization first of all; gpu_int8_wgmma whole ~300 s);
#   2. compute-sanitizer memcheck, racecheck, synccheck at small odd sizes: the per-thread
#      default at D=72 (rowsum_mma=1), and D=40 with four blocks, GQA, causal;
#   3. A/B (3 rounds) of main's templates against the branch's: int8-fp8 D=64 and 128, N=4096
#      and 16384 (the default configuration of each), D=128 N=4096 causal; and main's causal
#      D=128 with rowsum_mma 0 against 1 (s12: +1.9% for 1 in one round).
# Prediction (bench/NOTES.md): the branch -5 to -8% end to end (~58 fewer instructions a
# warp-tile on the softmax's chain), less at N=4096 if its quantization pass (125 registers at
# D=128 where main's takes 80) loses occupancy.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
MAIN=$B/tpl/main/templates BR=$B/tpl/int8-per-thread-kernels/templates
stamp start
for t in gpu_int8 gpu_int8_wgmma gpu_driver gpu_f16 gpu_fp4 gpu_tune gpu_wgmma; do
  ( timeout 420 $B/tests/$t > "$L/$t.log" 2>&1; stamp "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/$t.log" | tr '\n' ' ')" ) &
done
while read -r cfg args; do
  for tool in memcheck racecheck synccheck; do
    [[ $SECONDS -gt 200 ]] && break 2
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run $args --reps 1 \
      --config "variant=wgmma block_m=64 warps=4 block_n=128 $cfg" > "$L/san.tmp" 2>&1
    stamp "$tool rc=$? $cfg $args | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error +rel' "$L/san.tmp" | tr -s ' ' | tr '\n' ' ')"
    cat "$L/san.tmp" >> "$L/sanitize.log"
  done
done <<'RUNS'
stages=2 rowsum_mma=1 --family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
stages=3 blocks_per_sm=4 rowsum_mma=1 --family int8-fp8 --head-dim 40 --seq-q 130 --seq-k 257 --batch 2 --heads 4 --kv-heads 1 --causal top-left
RUNS
rm -f "$L/san.tmp"
wait
grep -hE "^FAIL" "$L"/gpu_*.log | head -8 >> "$S"
runs=""
for p in "--head-dim 64 --seq 4096" "--head-dim 64 --seq 16384" "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" \
         "--head-dim 128 --seq 4096 --causal top-left"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_TEMPLATES="$MAIN $BR" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout $((440 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
awk '{print $2, $3, $5, $6, $7, $8, $9, $10, $11, $12}' "$L/ab/ab.txt" | sort -k3 >> "$S"
cfg() { echo "--config 'variant=wgmma block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=$1'"; }
runs="--family int8-fp8 --head-dim 128 --seq 4096 --causal top-left --batch 4 --heads 32 $(cfg 0)"$'\n'
runs+="--family int8-fp8 --head-dim 128 --seq 4096 --causal top-left --batch 4 --heads 32 $(cfg 1)"
AB_TEMPLATES="$MAIN" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab2 AB_RUNS=$runs \
  timeout $((500 - SECONDS)) bash scripts/device.sh --ab > "$L/ab2.log" 2>&1
stamp "ab2 rc=$?"
ab_best "$L/ab2/ab.txt"
finish_call
exit 0
