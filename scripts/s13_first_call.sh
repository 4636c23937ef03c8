#!/usr/bin/env bash
# The first device call after session 12 (docs/status-2026-11-30-s12.md); ~8 min, timeout_s 520,
# everything inside stops by 480 s. Prepare here: bash scripts/s13_prepare.sh on main; carry
# build-gpu.
#   1. compute-sanitizer memcheck, racecheck, synccheck on session 12's new kernels at small odd
#      sizes: rowsum_mma=1 (the ones tile written before the ring's barrier, its n8 wgmma) at
#      D=72 with 128-key tiles, and with blocks_per_sm=4 at D=40, GQA, causal; in sequence, beside
#   2. every GPU test binary on main (gpu_int8_wgmma whole takes ~300 s alone; the rest ~60 s);
#   3. A/B (3 rounds): int8-fp8 D=128 N=4096 and 16384 causal, rowsum_mma 0 against 1 (session
#      12 measured +1.9% for 1 at N=4096 in one round: its default is 0 there until this says).
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_tune gpu_wgmma gpu_int8_wgmma; do
  ( timeout 400 $B/tests/$t > "$L/$t.log" 2>&1; stamp "$t rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$L/$t.log" | tr '\n' ' ')" ) &
done
while read -r cfg args; do
  for tool in memcheck racecheck synccheck; do
    [[ $SECONDS -gt 200 ]] && break 2
    timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run $args --reps 1 \
      --config "variant=wgmma block_m=64 warps=4 block_n=128 $cfg" > "$L/san.tmp" 2>&1
    stamp "$tool rc=$? $cfg $args | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error +rel' "$L/san.tmp" | tr -s ' ' | tr '\n' ' ')"
    cat "$L/san.tmp" >> "$L/sanitize.log"
  done
done <<'RUNS'
stages=2 rowsum_mma=1 --family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
stages=3 blocks_per_sm=4 rowsum_mma=1 --family int8-fp8 --head-dim 40 --seq-q 130 --seq-k 257 --batch 2 --heads 4 --kv-heads 1 --causal top-left
RUNS
rm -f "$L/san.tmp"
wait
grep -hE "^FAIL" "$L"/gpu_*.log | head -8 >> "$S"
cfg() { echo "--config 'variant=wgmma block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=$1'"; }
runs=""
for n in 4096 16384; do
  for r in 0 1; do runs+="--family int8-fp8 --head-dim 128 --seq $n --causal top-left --batch 4 --heads 32 $(cfg $r)"$'\n'; done
done
AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} timeout $((480 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
ab_best "$L/ab/ab.txt"
finish_call
exit 0
