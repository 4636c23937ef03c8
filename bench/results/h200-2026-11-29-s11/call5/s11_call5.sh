#!/usr/bin/env bash
# Session 11's last device call (~4 min; timeout_s 280, everything inside stops by 250 s):
#   1. compute-sanitizer memcheck, racecheck and synccheck on branch int8-overlap-fa3's overlap=2
#      kernel at small odd sizes (padding rows, keys and channels; GQA; causal), 64- and 128-key
#      tiles, in sequence;
#   2. beside them, the GPU test binaries that did not run this session on merged main (gpu_driver,
#      gpu_f16, gpu_fp4, gpu_int8, gpu_tune; gpu_int8_wgmma and gpu_wgmma ran under the same
#      templates in call 2).
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
FA3=$B/tpl/int8-overlap-fa3/templates
stamp start
for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_tune; do
  ( timeout 240 $B/tests/$t > "$L/$t.log" 2>&1; stamp "$t on main rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" ) &
done
while read -r cfg args; do
  for tool in memcheck racecheck synccheck; do
    [[ $SECONDS -gt 235 ]] && break 2
    MXATTN_TEMPLATE_DIR=$FA3 timeout $((248 - SECONDS)) compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run $args --reps 1 \
      --config "variant=wgmma overlap=2 block_m=64 warps=4 block_n=$cfg stages=3" > "$L/san.tmp" 2>&1
    stamp "$tool rc=$? block_n=$cfg $args | $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error +rel' "$L/san.tmp" | tr -s ' ' | tr '\n' ' ')"
    cat "$L/san.tmp" >> "$L/sanitize.log"
  done
done <<'RUNS'
128 --family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
64 --family int8-fp8 --head-dim 128 --seq 257 --batch 1 --heads 2
RUNS
rm -f "$L/san.tmp"
wait
finish_call
exit 0
