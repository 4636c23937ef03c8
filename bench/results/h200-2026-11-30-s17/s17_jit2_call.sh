#!/usr/bin/env bash
# Session 17, call 5: why the bare NVRTC driver compiled in 0.2 s (its "PTX Translation" phase
# 0 ms) what `mxattn compile` took 1.2-2.8 s for on this machine (call 4). Same source
# (int8-fp8 D=128), options one at a time, twice each, with NVRTC's phase times; the library's
# compile twice; the environment NVRTC might read. ~1 min; timeout_s 180; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
env | grep -i -E "cuda|nvrtc|ptx|nv_" | sort >> "$S"
ls -la /usr/local/cuda/lib64/libnvrtc* >> "$S" 2>&1
ldd $B/libmxattn.so | grep -i -E "nvrtc|cuda" >> "$S"
J=$B/jit; src=$J/int8-fp8_128.cu
for opt in "" "--ptxas-options=-v" "-lineinfo" "--ptxas-options=-O3"; do
  for rep in 1 2; do
    out=$($J/nvt "$src" $opt --time=$L/t.csv)
    stamp "nvt ${opt:-base} rep $rep: $(echo $out | awk '{print $2}') ms; $(tail -n +2 $L/t.csv | awk -F, '{printf "%s %s; ", $2, $3}')"
  done
done
for rep in 1 2; do
  stamp "mxattn compile rep $rep: $($B/mxattn compile --family int8-fp8 --head-dim 128 2>&1 | grep -E '^compile')"
done
MXATTN_DUMP_SOURCE=$L $B/mxattn compile --family int8-fp8 --head-dim 128 > /dev/null 2>&1
for f in $L/*.cu; do cmp -s "$f" "$src" && stamp "library source = jit source" || stamp "library source differs: $(diff "$f" "$src" | head -3 | tr '\n' ' ')"; done
strace -f -e trace=openat,execve -o $L/strace.txt $J/nvt "$src" > /dev/null 2>&1 && grep -v ENOENT $L/strace.txt | grep -i -E "cache|nv|ptx|exec" | head -20 >> "$S"
finish_call
exit 0
