#!/usr/bin/env bash
# Session 17, call 7: a module's kernels compiled apart (one NVRTC program and thread each;
# tuner/jit_image.c), on the GPU machine.
#   1. cold compile, the driver's compute cache off (CUDA_CACHE_DISABLE=1): `mxattn compile`
#      (now the parallel compile a plan runs) of every family at D = 64, 128, 256, twice;
#   2. plan creation cold (empty database, cache off) and warm (the database's binary), three
#      families, through `mxattn run` (its check against the CPU runs too);
#   3. the whole GPU suite, `ctest -L gpu -j8` (plans now load a module per kernel).
# Prediction (call 6, whole modules, cache off: int8-fp8 1.2-2.7 s, FP4 1.4-2.4 s, f16
# 0.5-1.2 s): the multi-kernel families fall to about their attention (FP4) or quantization
# (INT8) kernel's own time, -30 to -45%; f16 unchanged (one kernel).
# ~5 min; timeout_s 480. Prepare: scripts/prepare_gpu_build.sh; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
for rep in 1 2; do
  for f in f16 int8-f16 int8-fp8 nvfp4 mxfp4 nvfp4-int8qk; do
    line="$f"
    for d in 64 128 256; do
      ms=$(CUDA_CACHE_DISABLE=1 $B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
      line+=" D=$d ${ms:-fail}"
    done
    stamp "compile apart rep $rep (ms) $line"
  done
done
for f in f16 int8-fp8 nvfp4; do
  rm -f /tmp/plan.db*
  for phase in cold warm; do
    CUDA_CACHE_DISABLE=1 MXATTN_CACHE=/tmp/plan.db timeout 120 $B/mxattn run --family $f --head-dim 128 --seq 1024 \
      --batch 1 --heads 4 --reps 2 > "$L/run.tmp" 2>&1
    stamp "plan $phase $f rc=$?: $(grep -E '^(plan|error)' "$L/run.tmp" | tr -s ' ' | tr '\n' ' ')"
  done
done
rm -f "$L/run.tmp"
(cd $B && timeout 400 ctest -L gpu -j8 --output-on-failure > "$L/ctest_gpu.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest_gpu.log")"
grep -E "^\s+[0-9]+/[0-9]+ Test|Failed|\*\*\*" "$L/ctest_gpu.log" | head -12 >> "$S"
finish_call
exit 0
