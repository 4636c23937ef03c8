#!/usr/bin/env bash
# The first device call after session 14 (docs/status-2026-11-30-s14.md): branch four-blocks-d128
# (blocks_per_sm=4 up to D=128 with 64-key tiles and P V in two column slices: 128 registers, no
# spills; not yet run on a GPU). ~5 min, timeout_s 360. Prepare: git checkout four-blocks-d128 &&
# bash scripts/prepare_gpu_build.sh; carry build-gpu.
#   1. gpu_int8_wgmma '*more_blocks*' (the pipeline reference at D=128/96/80/112 and the lengths
#      cases at D=128: a slice folded into the other's columns reads as wrong columns);
#   2. compute-sanitizer on D=128 causal GQA LSE and D=96 with 32-key tiles;
#   3. A/B (3 rounds) against the defaults (three blocks an SM of 128-key tiles) at D=128
#      N=4096/16384, causal N=4096, and D=96 N=16384.
# Prediction (bench/NOTES.md, fourteenth session): four independent chains an SM where three run
# now (at D=64 four measured 5% faster than three), against twice the tiles (each tile's waits,
# barriers and K-scale loads) and a second P V wait a tile: between -5% and +5%; if it wins, the
# tuner's candidates at D=128 should rank it (WG.prior's more_blocks, 0.9 until measured).
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
timeout 200 $B/tests/gpu_int8_wgmma "*more_blocks*" > "$L/gpu_int8_wgmma_more_blocks.log" 2>&1
stamp "gpu_int8_wgmma more_blocks rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma_more_blocks.log" | tr '\n' ' ')"
grep -hE "^FAIL" "$L/gpu_int8_wgmma_more_blocks.log" | head -4 >> "$S"
sanitize_each "variant=wgmma" <<'RUNS'
block_m=64 warps=4 block_n=64 stages=2 blocks_per_sm=4 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
block_m=64 warps=4 block_n=32 stages=3 blocks_per_sm=4|--family int8-fp8 --head-dim 96 --seq-q 130 --seq-k 257 --batch 2 --heads 2 --kv-heads 1
RUNS
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 128 --seq 4096 --causal top-left" "--head-dim 96 --seq 16384"; do
  [[ $p == *causal* ]] && rs=0 || rs=1
  for cfg in "block_n=128 stages=2" "block_n=64 stages=2 blocks_per_sm=4" "block_n=32 stages=3 blocks_per_sm=4"; do
    runs+="--family int8-fp8 $p --batch 4 --heads 32 --config 'variant=wgmma block_m=64 warps=4 $cfg rowsum_mma=$rs'"$'\n'
  done
done
AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} timeout $((340 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##; s#variant=wgmma block_m=64 warps=4 ##' >> "$S"
finish_call
exit 0
