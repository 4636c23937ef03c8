#!/usr/bin/env bash
# The first device call after session 13 (docs/status-2026-11-30-s13.md): correctness of branch
# ring3 (main + fuse_q + overlap=3), neither run on a GPU yet. ~5 min, timeout_s 360, everything
# inside stops by 330 s. Prepare: git checkout ring3 && bash scripts/prepare_gpu_build.sh; carry
# build-gpu.
#   1. gpu_int8_wgmma '*fuse_q*' and '*ring*' (against the pipeline reference: a Q code at the
#      wrong place of the tile, a turn out of order or a slot refilled early reads as wrong rows;
#      a lost barrier arrival as a hang, which the test's watchdog ends) and gpu_int8 (the quant
#      kernel bit for bit, D=96 and 192 new), side by side;
#   2. compute-sanitizer memcheck, racecheck, synccheck: fuse_q=1 at the three swizzles (D=72,
#      D=40 with two consumer warpgroups, D=128 overlap=2) and the ring (D=128 causal GQA LSE,
#      D=64 a window past the keys).
# Then scripts/s14_second_call.sh measures.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
for f in fuse_q ring; do
  ( timeout 280 $B/tests/gpu_int8_wgmma "*$f*" > "$L/gpu_int8_wgmma_$f.log" 2>&1
    stamp "gpu_int8_wgmma $f rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma_$f.log" | tr '\n' ' ')" ) &
done
( timeout 280 $B/tests/gpu_int8 > "$L/gpu_int8.log" 2>&1
  stamp "gpu_int8 rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8.log" | tr '\n' ' ')" ) &
sanitize_each "variant=wgmma" <<'RUNS'
fuse_q=1 block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
fuse_q=1 block_m=128 warps=8 block_n=64 stages=2|--family int8-fp8 --head-dim 40 --seq-q 130 --seq-k 257 --batch 2 --heads 4 --kv-heads 1 --causal top-left
fuse_q=1 overlap=2 block_m=64 warps=4 block_n=128 stages=3|--family int8-fp8 --head-dim 128 --seq-q 70 --seq-k 150 --batch 1 --heads 2 --kv-heads 1
overlap=3 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 400 --seq-k 700 --batch 1 --heads 4 --kv-heads 2 --causal top-left
overlap=3 block_m=192 warps=12 block_n=64 stages=2|--family int8-fp8 --head-dim 64 --seq-q 70 --seq-k 150 --batch 1 --heads 2 --kv-heads 1
RUNS
wait
grep -hE "^FAIL" "$L"/gpu_*.log | head -8 >> "$S"
finish_call
exit 0
