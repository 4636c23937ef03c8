#!/usr/bin/env bash
# The first device call of the session after 2026-11-29-s11 (docs/status-2026-11-29-s11.md), for
# branch int8-four-blocks (knob blocks_per_sm: int8-fp8's one-warpgroup kernel compiled for four
# blocks an SM at 128-key tiles, 128 registers, or five at 64-key tiles, 102 registers; D<=64),
# not yet run on a GPU, and main's new gpu_wgmma test (mxattn_candidates starts with the plan's
# default). ~8 min; timeout_s 560, everything inside stops by 520 s.
#   1. gpu_int8_wgmma '*more_blocks*' under the branch; gpu_wgmma '*candidates*' on main;
#   2. end to end A/B (3 interleaved rounds) under the branch's templates: int8-fp8 D=64 N=4096
#      and 16384, causal and not: the default (3 blocks, 128 keys), blocks_per_sm=4 on the same
#      tile, overlap=0 at 64 keys (3 blocks) and blocks_per_sm=5 on it; D=32 N=4096 default vs 5;
#   3. ncu of blocks_per_sm=4 D=64 N=4096 (issue slots, warps, stall reasons a SASS line).
# Predictions (bench/NOTES.md, "Eleventh session"): blocks_per_sm=4 -8 to -15% end to end at D=64
# against the default; 5 at 64 keys -5 to -12% against overlap=0 on that tile.
# Prepare here: git checkout main && bash scripts/s12_prepare.sh; carry build-gpu.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
FB=$B/tpl/int8-four-blocks/templates
stamp start
( MXATTN_TEMPLATE_DIR=$FB timeout 200 $B/tests/gpu_int8_wgmma_4b '*more_blocks*' > "$L/more_blocks.log" 2>&1
  stamp "gpu_int8_wgmma more_blocks under the branch rc=$? $(grep -E 'PASSED|FAILED' "$L/more_blocks.log" | tail -1)" ) &
( timeout 200 $B/tests/gpu_wgmma '*candidates*' > "$L/candidates.log" 2>&1
  stamp "gpu_wgmma candidates on main rc=$? $(grep -E 'PASSED|FAILED' "$L/candidates.log" | tail -1)"; grep '^#' "$L/candidates.log" >> "$S" ) &
wait
cfg() { echo "--config 'variant=wgmma block_m=64 warps=4 block_n=$1 stages=3$2'"; }
runs=""
for p in "--seq 4096" "--seq 4096 --causal top-left" "--seq 16384" "--seq 16384 --causal top-left"; do
  for c in "" "$(cfg 128 ' blocks_per_sm=4')" "$(cfg 64 '')" "$(cfg 64 ' blocks_per_sm=5')"; do
    runs+="--family int8-fp8 --head-dim 64 $p --batch 4 --heads 32 $c"$'\n'
  done
done
runs+="--family int8-fp8 --head-dim 32 --seq 4096 --batch 4 --heads 32"$'\n'
runs+="--family int8-fp8 --head-dim 32 --seq 4096 --batch 4 --heads 32 $(cfg 64 ' blocks_per_sm=5')"
AB_TEMPLATES="$FB" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=$runs \
  timeout $((440 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
ab_best "$L/ab/ab.txt"
MXATTN_TEMPLATE_DIR=$FB ncu_profile $((510 - SECONDS)) 'int8_fp8_d64_[0-9a-f]+$' $((262144 * 4)) -- \
  $B/mxattn run --family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 \
  --config 'variant=wgmma block_m=64 warps=4 block_n=128 stages=3 blocks_per_sm=4'
finish_call
exit 0
