#!/usr/bin/env bash
# Session 22, call 7: why was the default shared ring 4-6% slower with b3912b8's templates (calls
# 2-4), whose module PTX differs from 70107ff's only in the attention kernel's set-up (the first
# copies inline at the top instead of moved past the loop) and a stray `.global CLUSTER`?
# ncu of both at D=128 N=4096 B=4 H=32: duration, issue rate, stall reasons (no_instruction would
# say instruction fetch), and each kernel's SASS size and main loop (cuobjdump).
# ~3 min; timeout_s 300; carry build-gpu (tpl/b3912b8).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
SLOW=$PWD/$(ls -d $B/tpl/*/templates | head -1)
for v in "now|$PWD/templates" "slow|$SLOW"; do
  IFS='|' read -r name tdir <<< "$v"
  t=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 50 --check-heads 0 2>&1 | grep -E "^time" | tr -s ' ')
  stamp "$name: $t"
  MXATTN_TEMPLATE_DIR=$tdir timeout 100 ncu --clock-control none --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
    -k regex:"^mxattn_int8_fp8_d128_[0-9a-f]+$" -c 1 \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 < /dev/null > "$L/ncu_$name.txt" 2>&1
  stamp "ncu $name: $(grep -E ' Duration|SM Frequency|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Instructions  ' "$L/ncu_$name.txt" | tr -s ' ' | tr '\n' ';')"
  grep -iE "stall|No Instruction|Branch Resolving|Barrier|Long Scoreboard" "$L/ncu_$name.txt" | tr -s ' ' | head -12 >> "$S"
  MXATTN_TEMPLATE_DIR=$tdir $B/mxattn compile --family int8-fp8 --head-dim 128 --variant wgmma --block-m 192 --warps 12 --block-n 128 --stages 3 --rowsum-mma 1 --cubin /tmp/$name.cubin > /dev/null 2>&1
  cuobjdump -sass /tmp/$name.cubin > "$L/sass_$name.txt" 2>&1
  stamp "sass $name: $(grep -c '^ */\*[0-9a-f]*\*/' "$L/sass_$name.txt") instructions in the module"
done
finish_call
exit 0
