#!/usr/bin/env bash
# Session 17, call 6: cold JIT measured cold. NVRTC 13 keeps compiled PTX and cubins in the
# driver's compute cache (strings in libnvrtc: "retrieved cached cubin from driver cache";
# CUDA_CACHE_DISABLE turns it off), which call 4's best-of-three and call 5's second runs hit.
# Here CUDA_CACHE_DISABLE=1 throughout:
#   1. `mxattn compile` of every family at D = 64, 128, 256 (one process each, as a user's
#      first plan would compile), twice;
#   2. the bare NVRTC driver on the dumped sources, twice each: the library's options, then
#      with --split-compile=4 and =0, and without --ptxas-options=-v; NVRTC's phase times.
# ~3 min; timeout_s 300; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
export CUDA_CACHE_DISABLE=1
stamp start
for rep in 1 2; do
  for f in f16 int8-f16 int8-fp8 nvfp4 mxfp4 nvfp4-int8qk; do
    line="$f"
    for d in 64 128 256; do
      ms=$($B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
      line+=" D=$d ${ms:-fail}"
    done
    stamp "compile rep $rep (ms) $line"
  done
done
J=$B/jit
for src in $J/*.cu; do
  name=$(basename "$src" .cu)
  for opt in "--ptxas-options=-v" "--ptxas-options=-v --split-compile=4" "--ptxas-options=-v --split-compile=0" ""; do
    for rep in 1 2; do
      out=$($J/nvt "$src" $opt --time=$L/t.csv | awk '{print $2}')
      stamp "nvt $name [${opt:-no -v}] rep $rep: $out ms; $(tail -n +2 $L/t.csv | awk -F, '{printf "%s %s; ", $2, $3}')"
      rm -f $L/t.csv
    done
  done
done
finish_call
exit 0
