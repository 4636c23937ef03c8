#!/usr/bin/env bash
# Session 13's second device call (~7.5 min, timeout_s 480): the per-thread branch after its
# one-load quant pass (commit "int8-fp8 per-thread quant: one load of each element"). Prepare:
# git checkout int8-per-thread-kernels && bash scripts/s13_prepare.sh &&
# scripts/ab_templates.sh build-gpu e6ddadf; carry build-gpu.
#   1. A/B, GPU otherwise idle, 3 rounds: main's templates, the branch's two-pass quant (e6ddadf)
#      and its one-load quant (the build's own), int8-fp8 D=64/128 N=4096/16384 and D=128 N=4096
#      causal; then ncu's quant-kernel time and registers at D=128 and D=64 N=4096 for each.
#   2. every GPU test binary of the branch build side by side (gpu_int8's quantizer check is
#      bit-exact against numerics' per-thread groups; its attention cases now take the plan's
#      config for the reference), and compute-sanitizer memcheck/racecheck/synccheck on the new
#      quant kernel: D=72 rowsum, D=40 four blocks, and D=64 block_n=64 seq_k=150 (nkp=192:
#      a window whose last four warps are past the keys and only meet the barrier).
# Prediction: the one-load quant ~= main's quant time (~0.1 ms at D=128 N=4096), the branch then
# -2..-5% end to end at N=4096 and -4..-8% at N=16384 against main.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
MAIN=$B/tpl/main/templates OLD=$B/tpl/e6ddadf/templates
stamp start
runs=""
for p in "--head-dim 64 --seq 4096" "--head-dim 64 --seq 16384" "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" \
         "--head-dim 128 --seq 4096 --causal top-left"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_TEMPLATES="$MAIN $OLD -" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  KT_RUNS=$'--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32' \
  timeout 170 bash scripts/device.sh --ab --kernel-times > "$L/ab.log" 2>&1
stamp "ab rc=$?"
ab_best "$L/ab/ab.txt"
grep "^## kt" "$L/ab.log" | sed 's#build-gpu/tpl/##' >> "$S"
for t in gpu_int8 gpu_int8_wgmma gpu_driver gpu_f16 gpu_fp4 gpu_tune gpu_wgmma; do
  ( timeout $((455 - SECONDS)) $B/tests/$t > "$L/$t.log" 2>&1; stamp "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/$t.log" | tr '\n' ' ')" ) &
done
while IFS='|' read -r cfg args; do
  for tool in memcheck racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run $args --reps 1 \
      --config "variant=wgmma block_m=64 warps=4 $cfg" > "$L/san.tmp" 2>&1
    stamp "$tool rc=$? $cfg $args | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error +rel' "$L/san.tmp" | tr -s ' ' | tr '\n' ' ')"
    cat "$L/san.tmp" >> "$L/sanitize.log"
  done
done <<'RUNS'
block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
block_n=128 stages=3 blocks_per_sm=4 rowsum_mma=1|--family int8-fp8 --head-dim 40 --seq-q 130 --seq-k 257 --batch 2 --heads 4 --kv-heads 1 --causal top-left
block_n=64 stages=3|--family int8-fp8 --head-dim 64 --seq-q 70 --seq-k 150 --batch 1 --heads 2 --kv-heads 1
RUNS
rm -f "$L/san.tmp"
wait
grep -hE "^FAIL" "$L"/gpu_*.log | head -8 >> "$S"
finish_call
exit 0
