#!/usr/bin/env bash
# Session 22, call 11: three consumers' release test, four ways (call 10: the division-free test
# cut ~4% of the instructions, yet ptxas scheduled D=128's loop 3.6% slower at N=16384).
# v1 count == 4*live*(t/STAGES+1)-1 (call 10's); v2 a running last count, += 4*live every STAGES
# tiles (no multiply); v3 v1 with __builtin_expect(…, 0) on the refill; v4 the remainder by the
# constant 4*CONSUMERS in full blocks, by live only in a head's last block.  Prediction: each
# within +-4% of the base (the schedule decides); one that is faster at both lengths by >= 1%
# would be worth merging.  Then each variant's test_shared_ring.  ~3 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
for round in 1 2 3; do
  for v in base v1 v2 v3 v4; do
    tdir=$PWD/templates; [[ $v != base ]] && tdir=$PWD/$B/tpl/$v/templates
    for n in 4096 16384; do
      t=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 --head-dim 128 --seq $n --batch 4 --heads 32 --reps $((n == 4096 ? 50 : 10)) --check-heads 0 2>&1 | grep -E "^time" | tr -s ' ')
      stamp "round $round $v N=$n: $t"
    done
  done
done
for v in v1 v2 v3 v4; do
  MXATTN_TEMPLATE_DIR=$PWD/$B/tpl/$v/templates timeout 60 $B/tests/gpu_int8_wgmma "*shared_ring*" > "$L/gpu_$v.log" 2>&1
  stamp "$v test_shared_ring rc=$?: $(grep -E '^\[ +(OK|FAILED|PASSED) ' "$L/gpu_$v.log" | tr -s ' ' | tr '\n' ' ')"
done
finish_call
exit 0
