#!/usr/bin/env bash
# Session 22, call 13: the running last count (call 11's v2) for every one-block shared ring.  At
# D=128 its PTX is call 11's v2 (-2.2% at N=4096, +0.5% at N=16384; bench -1.8 to -2.4% / +0.5 to
# +1.3%).  At D=64 (four consumers) it replaces call 10's last_release (-3.9%): A/B against it
# (tpl = 945fdc6's templates), test_shared_ring, sanitizers.  ~1.5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
OLD=$PWD/$(ls -d $B/tpl/*/templates | head -1)
for round in 1 2 3; do
  for v in "v2|$PWD/templates" "v1|$OLD"; do
    IFS='|' read -r name tdir <<< "$v"
    t=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 --head-dim 64 --seq 16384 --batch 4 --heads 32 --reps 10 --check-heads 0 2>&1 | grep -E "^time" | tr -s ' ')
    stamp "round $round $name D=64 N=16384: $t"
  done
done
C4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1"
sanitize_each "" <<EOR
$C4|--family int8-fp8 --head-dim 64 --seq-q 1100 --seq-k 900 --batch 1 --heads 2 --kv-heads 1
EOR
timeout 60 $B/tests/gpu_int8_wgmma "*shared_ring*" > "$L/gpu_shared_ring.log" 2>&1
stamp "test_shared_ring rc=$?: $(grep -E '^\[ +(OK|FAILED|PASSED) ' "$L/gpu_shared_ring.log" | tr -s ' ' | tr '\n' ' ')"
finish_call
exit 0
