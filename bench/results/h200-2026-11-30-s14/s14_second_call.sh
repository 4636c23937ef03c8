#!/usr/bin/env bash
# The second device call after session 13: what fuse_q, overlap=3 (the three-consumer ring),
# exp_poly and overlap=2 do on the per-thread kernel (branch ring3, after s14_first_call.sh
# passed). ~7.5 min, timeout_s 480, everything inside stops by 455 s; same build-gpu.
#   1. A/B (3 rounds): fuse_q 0/1 on the defaults' tiles at D=128 and 64, N=1024/4096/16384, and
#      causal D=128 N=4096; the ring (block_m=192, warps=12) at D=128 and 64, N=4096 and 16384;
#      exp_poly 1|2 and overlap=2 on the D=128 default;
#   2. the tensor and MUFU pipes' use (ncu raw metrics) of the default, overlap=2 and the ring;
#   3. ncu's source page of the default, where time is left.
# Predictions (bench/NOTES.md, "Thirteenth session"): fuse_q -2 to -3% at N=4096, -5 to -8% at
# N=1024, ~-1% at N=16384. The ring: if the default's tensor + MUFU use sums to ~90-100% (the
# lockstep), 1.4-1.7x the attention kernel at D=128 N=16384 (~600-700 clocks a tile, not 1040).
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
# The ring's GPU test again: call 1 found its rowsum_mma=1 cases refused by the pipeline reference
# (p_fold was set for overlap 0 and 2 only; the ring runs overlap=0's tile_pv).
timeout 90 $B/tests/gpu_int8_wgmma "*ring*" > "$L/gpu_int8_wgmma_ring.log" 2>&1
stamp "gpu_int8_wgmma ring rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/gpu_int8_wgmma_ring.log" | tr '\n' ' ')"
grep -hE "^FAIL" "$L/gpu_int8_wgmma_ring.log" | head -4 >> "$S"
runs=""
for d in 128 64; do
  [[ $d == 128 ]] && tile="stages=2" || tile="stages=3 blocks_per_sm=4"
  for n in 1024 4096 16384; do
    for f in 0 1; do
      runs+="--family int8-fp8 --head-dim $d --seq $n --batch 4 --heads 32 --config 'variant=wgmma block_m=64 warps=4 block_n=128 $tile rowsum_mma=1 fuse_q=$f'"$'\n'
    done
  done
done
# exp_poly (a quarter or half of the exponentials by polynomial on the FMA pipe) was 5% slower in
# session 3, when the softmax spent ~10 instructions a score; the per-thread kernel spends 3 (IADD,
# FFMA, MUFU.EX2), and a warp's 64 ex2 a tile take 512 clocks of its SMSP's MUFU: measured again.
for e in 1 2; do
  for n in 4096 16384; do
    runs+="--family int8-fp8 --head-dim 128 --seq $n --batch 4 --heads 32 --config 'variant=wgmma block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1 exp_poly=$e'"$'\n'
  done
done
# overlap=2 (S(t+1) issued before the softmax of t, in each warpgroup) measured level with the
# default at D=128 in session 11; the per-thread softmax is lighter: measured again.
for n in 4096 16384; do
  runs+="--family int8-fp8 --head-dim 128 --seq $n --batch 4 --heads 32 --config 'variant=wgmma overlap=2 block_m=64 warps=4 block_n=128 stages=3'"$'\n'
done
# The ring against the defaults above (rowsum on, as theirs).
for d in 128 64; do
  for n in 4096 16384; do
    runs+="--family int8-fp8 --head-dim $d --seq $n --batch 4 --heads 32 --config 'variant=wgmma overlap=3 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1'"$'\n'
  done
done
runs+="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --config 'variant=wgmma overlap=3 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1 fuse_q=1'"$'\n'
for f in 0 1; do
  runs+="--family int8-fp8 --head-dim 128 --seq 4096 --causal top-left --batch 4 --heads 32 --config 'variant=wgmma block_m=64 warps=4 block_n=128 stages=2 fuse_q=$f'"$'\n'
done
AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} timeout $((360 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##; s#variant=wgmma block_m=64 warps=4 block_n=128 ##' >> "$S"
# Do the tensor pipe and MUFU overlap?  A tile of a warpgroup needs 512 SM-clocks of each (S and
# P V at 8192 int8/fp8 ops a clock; 8192 ex2 at 16 a clock), and the A/B's ~1040 clocks a tile
# (D=128 N=16384) is their sum: s7's ncu read tensor 44% + MUFU 46%.  If the per-thread default
# and overlap=2 still sum to ~90-100%, the three blocks of an SM run their phases in step; the
# ring should read both well above 50%.
n=0
for cfg in "block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1" "overlap=3 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1" \
           "overlap=2 block_m=64 warps=4 block_n=128 stages=3"; do
  n=$((n + 1))
  [[ $SECONDS -gt 410 ]] && break
  timeout 60 ncu --clock-control none --section ComputeWorkloadAnalysis --page raw -k regex:'int8_fp8_d128_[0-9a-f]+$' -c 1 \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 \
    --config "variant=wgmma $cfg" < /dev/null > "$L/pipes_$n.txt" 2>&1
  stamp "pipes $cfg: $(grep -E 'pipe_(tensor|xu|alu|fma)[a-z_]*\.avg\.pct_of_peak_sustained_active|inst_executed_pipe_xu[a-z_.]*pct|issue_active\.avg\.pct' "$L/pipes_$n.txt" | awk '{print $1, $NF}' | tr '\n' ' ')"
done
# The per-thread D=128 default under ncu (not profiled since the per-thread groups): what a
# warp-tile costs now, issue use, occupancy (8192 blocks x 32 key tiles x 4 warps).
if [[ $SECONDS -lt 400 ]]; then
  ncu_profile $((455 - SECONDS)) 'int8_fp8_d128_[0-9a-f]+$' $((262144 * 4)) -- \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0
fi
finish_call
exit 0
