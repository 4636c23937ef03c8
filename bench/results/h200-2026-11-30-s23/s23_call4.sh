#!/usr/bin/env bash
# Session 23, call 4 (a fourth machine start): (1) every #7 shape in its sustained state
# (bench/micro/sustained_power.py: each implementation alone 3 s, the first second dropped;
# D=128 and 64, N=4096 and 16384, causal and not); (2) ncu's pipe use of the int8-fp8 D=128
# default (the shared ring) at N=4096 and 16384, one launch each: what issue #7's account of
# the tile needs (tensor, XU, FMA/ALU, issue).  ~5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
timeout 300 python3 bench/micro/sustained_power.py --dims 128,64 --seqs 4096,16384 --causal no,yes --seconds 3 > "$L/power.md" 2>&1
stamp "sustained_power rc=$?"; cat "$L/power.md" >> "$S"
for n in 4096 16384; do
  timeout 90 ncu --clock-control none --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --page raw \
    -k regex:'int8_fp8_d128_[0-9a-f]+$' -c 1 \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq $n --batch 4 --heads 32 --reps 1 --check-heads 0 < /dev/null > "$L/pipes_$n.txt" 2>&1
  stamp "pipes N=$n rc=$?: $(grep -E 'pipe_(tensor|xu|alu|fma)[a-z_]*\.avg\.pct_of_peak_sustained_active|inst_executed_pipe_xu[a-z_.]*pct|issue_active\.avg\.pct|gpc__cycles_elapsed.max |sm__cycles_active.avg |smsp__warps_eligible.avg.per_cycle_active|smsp__inst_executed.sum ' "$L/pipes_$n.txt" | awk '{print $1, $NF}' | tr '\n' ' ')"
  grep -E "^config|^kernel" "$L/pipes_$n.txt" >> "$S"
done
finish_call
exit 0
