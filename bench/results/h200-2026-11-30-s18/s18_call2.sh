#!/usr/bin/env bash
# Session 18, call 2: the INT8 quant kernel's slow path as a rolled loop (codes_slowly, 2a0...)
#  1. ctest -L gpu (gpu_int8's tiny-scale blocks take the new slow path);
#  2. A/B of the call time, templates before (tpl/HEAD~1) and after (built-in), 3 rounds;
#     ncu's quant-kernel duration and registers for both;
#  3. cold compile (CUDA_CACHE_DISABLE=1) of the INT8 families, before and after, twice.
# ~7 min; timeout_s 560; carry build-gpu (prepared with scripts/prepare_gpu_build.sh HEAD~1).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
OLD=$B/tpl/HEAD_1/templates
stamp start
(cd $B && timeout 240 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
export AB_TEMPLATES="$OLD -" AB_ROUNDS=3 AB_RUNS="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32
--family int8-fp8 --head-dim 256 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 64 --seq 16384 --batch 1 --heads 32
--family int8-f16 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family int8-f16 --head-dim 256 --seq 4096 --batch 4 --heads 32"
export KT_RUNS="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 256 --seq 4096 --batch 4 --heads 32
--family int8-f16 --head-dim 256 --seq 4096 --batch 4 --heads 32
--family int8-f16 --head-dim 64 --seq 4096 --batch 4 --heads 32"
MXATTN_BUILD=$B OUT=$L/ab timeout 330 bash scripts/device.sh --ab --kernel-times > "$L/ab.log" 2>&1
stamp "ab rc=$?"; grep -E "ab |kt " "$L/ab.log" >> "$S"
export CUDA_CACHE_DISABLE=1
for rep in 1 2; do
  for tpl in old new; do
    dir=$OLD; [[ $tpl == new ]] && dir=""
    line="$tpl rep $rep"
    for f in int8-f16 int8-fp8; do
      for d in 64 128 256; do
        ms=$(MXATTN_TEMPLATE_DIR="$dir" $B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
        line+=" $f/$d=${ms:-fail}"
      done
    done
    stamp "cold compile (ms) $line"
  done
done
finish_call
exit 0
