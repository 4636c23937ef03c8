#!/usr/bin/env bash
# Session 22, call 9: CI found the pair kernel with an 8-byte stack frame (`tiles[rank]`, an
# index by the block's rank, put the pair's tile counts in local memory); now selected without an
# index (stack 0), and the cluster helpers render only into the pair's source (f16's and
# int8-fp8 cluster=1's sources byte-identical to the session's start).  The pair's GPU test and
# sanitizers on the final code, and the pair against the one-block ring once more (prediction:
# still 8-14% slower; the local loads sat off the MMA path).  ~3 min; timeout_s 300; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
C3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
timeout 100 $B/tests/gpu_int8_wgmma "*cluster*" > "$L/gpu_cluster.log" 2>&1
stamp "gpu_int8_wgmma *cluster* rc=$?: $(grep -E '^\[ +(OK|FAILED|PASSED) ' "$L/gpu_cluster.log" | tr -s ' ' | tr '\n' ' ')"
sanitize_each "" <<EOR
$C3 cluster=2|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2 --causal bottom-right
EOR
for round in 1 2 3; do
  for v in "one|$C3" "pair|$C3 cluster=2"; do
    IFS='|' read -r name cfg <<< "$v"
    for n in 4096 16384; do
      t=$(timeout 60 $B/mxattn run --family int8-fp8 --head-dim 128 --seq $n --batch 4 --heads 32 --reps $((n == 4096 ? 50 : 10)) --check-heads 0 --config "$cfg" 2>&1 | grep -E "^time" | tr -s ' ')
      stamp "round $round $name N=$n: $t"
    done
  done
done
finish_call
exit 0
