#!/usr/bin/env bash
# Session 19, call 3: where a cold compile goes on the GPU machine, and the FP4 families' key tile.
#  1. build-gpu/jitprobe/nt2 (source: jitprobe/nt2.c): the NVRTC compile of each kernel of a
#     module, one after the other (seq) and on one thread each (par), CUDA_CACHE_DISABLE=1,
#     twice: int8-fp8 D=64 and 128 (split quant kernels), f16 D=128, nvfp4 D=128 at block_n
#     64 (the default) and 32.  Call 2 read `mxattn compile` there 0.75-0.9 s at int8-fp8
#     D<=128, where the CPU machine's slowest kernel is ~0.35-0.4 s.
#  2. FP4 families (emulated on sm_90a) at D=64 and 128, block_n 64 (default) against 32,
#     whose attention kernel compiles ~40% faster (CPU machine: nvfp4 D=128 1.04 -> 0.66 s).
#     Prediction: block_n=32 runs 5-15% slower (twice the tiles' barriers and dequantization
#     rounds).  2 rounds, B=1 H=32 N=4096.
# ~5 min; timeout_s 420; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
P=$B/jitprobe
stamp start
export CUDA_CACHE_DISABLE=1
for rep in 1 2; do
  for m in int8fp8_64 int8fp8_128 f16_128 nvfp4_128 nvfp4_128_bn32; do
    for mode in seq par; do
      $P/nt2 $P/$m.cu sm_90a $mode $(cat $P/$m.kernels) > "$L/nt2.tmp" 2>&1
      stamp "nt2 rep $rep $m $mode: $(tr -s ' ' < "$L/nt2.tmp" | tr '\n' ' ')"
    done
  done
done
unset CUDA_CACHE_DISABLE
nproc >> "$S"; grep -m1 "model name" /proc/cpuinfo >> "$S"
runs=""
for f in nvfp4 mxfp4 nvfp4-int8qk; do
  for d in 64 128; do
    for bn in 64 32; do
      runs+="--family $f --head-dim $d --seq 4096 --batch 1 --heads 32 --config block_n=$bn"$'\n'
    done
  done
done
runs+="--family nvfp4 --head-dim 128 --seq 4096 --batch 1 --heads 32 --causal top-left --config block_n=64"$'\n'
runs+="--family nvfp4 --head-dim 128 --seq 4096 --batch 1 --heads 32 --causal top-left --config block_n=32"
export AB_TEMPLATES="-" AB_ROUNDS=2 AB_RUNS="$runs"
MXATTN_BUILD=$B OUT=$L/ab timeout 300 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
[[ -f $L/ab/ab.txt ]] && ab_best "$L/ab/ab.txt"
finish_call
exit 0
