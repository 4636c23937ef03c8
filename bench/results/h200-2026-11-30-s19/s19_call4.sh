#!/usr/bin/env bash
# Session 19, call 4: the FP4 families' emulation with 32-key tiles by default (sm_90a), and
# what a cold compile pays before its first kernel on the GPU machine.
#  1. ctest -L gpu (gpu_fp4's default plans now take block_n=32 at D <= 128);
#  2. FP4 at D=80 and 96 (the head dims call 3 did not time), block_n 64 against 32, 2 rounds;
#     prediction: 32 within +-10% of 64 (at D=64 it ran a third faster, at 128 10% slower);
#  3. jitprobe/nt2 warmpar: an empty program first (NVRTC's own start-up), then the module's
#     kernels on one thread each; `mxattn info` wall time (driver start); prediction: the
#     empty program ~250-300 ms there (call 3: a first kernel ~300 ms slower than here);
#  4. cold `mxattn compile` of every family at D=64/128/256, CUDA_CACHE_DISABLE=1, twice.
# ~6 min; timeout_s 540; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
P=$B/jitprobe
stamp start
(cd $B && timeout 240 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
runs=""
for f in nvfp4 mxfp4 nvfp4-int8qk; do
  for d in 80 96; do
    for bn in 64 32; do
      runs+="--family $f --head-dim $d --seq 4096 --batch 1 --heads 32 --config block_n=$bn"$'\n'
    done
  done
done
export AB_TEMPLATES="-" AB_ROUNDS=2 AB_RUNS="$runs"
MXATTN_BUILD=$B OUT=$L/ab timeout 240 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
[[ -f $L/ab/ab.txt ]] && ab_best "$L/ab/ab.txt"
export CUDA_CACHE_DISABLE=1
for rep in 1 2; do
  for m in int8fp8_128 f16_128 nvfp4_128_bn32; do
    $P/nt2 $P/$m.cu sm_90a warmpar $(cat $P/$m.kernels) > "$L/nt2.tmp" 2>&1
    stamp "nt2 rep $rep $m warmpar: $(tr -s ' ' < "$L/nt2.tmp" | tr '\n' ' ')"
  done
  s0=$(date +%s%N); $B/mxattn info > "$L/info.txt" 2>&1; s1=$(date +%s%N)
  stamp "mxattn info: $(( (s1 - s0) / 1000000 )) ms"
done
for rep in 1 2; do
  line="cold compile (ms) rep $rep"
  for f in f16 int8-f16 int8-fp8 nvfp4 mxfp4 nvfp4-int8qk; do
    for d in 64 128 256; do
      ms=$($B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
      line+=" $f/$d=${ms:-fail}"
    done
  done
  stamp "$line"
done
finish_call
exit 0
