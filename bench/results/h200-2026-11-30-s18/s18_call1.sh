#!/usr/bin/env bash
# Session 18, call 1.
#  1. The whole GPU suite (ctest -L gpu) on the nvfp4-int8qk INT8-quantizer fix (41e0b0c)
#     and the tuner pool's whole modules (s17, never GPU-tested); gpu_fp4 again with the seed
#     that failed in s17 (MXATTN_TEST_SEED=1796035267).
#  2. Experiment (not merged; jit_image.c reads MXATTN_EXP_OFC_PREP / _ATTN and compiles the
#     pre-pass kernels / the attention kernel with --Ofast-compile=LEVEL): call time of each
#     setting, fresh database each, and the cold compile (CUDA_CACHE_DISABLE=1) of each family.
# ~6 min; timeout_s 560; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
R=bench/results/h200-2026-11-30-s18
stamp start
(cd $B && timeout 300 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
MXATTN_TEST_SEED=1796035267 timeout 120 $B/tests/gpu_fp4 > "$L/fp4_seed.log" 2>&1
stamp "gpu_fp4 seed 1796035267 rc=$?: $(grep -E 'Nq=1 Nk=129|INT8 ties|FAIL' "$L/fp4_seed.log" | cut -c1-150 | tr '\n' ' ')"
P="int8-fp8:128:4096 int8-fp8:128:16384 int8-fp8:256:4096 int8-fp8:64:16384 int8-f16:128:4096 f16:128:4096 nvfp4:128:4096 mxfp4:128:4096 nvfp4-int8qk:128:4096 int8-fp8:128:1024"
for set in "base|" "prep=mid|MXATTN_EXP_OFC_PREP=mid" "prep=max|MXATTN_EXP_OFC_PREP=max" "prep=min|MXATTN_EXP_OFC_PREP=min" "attn=min|MXATTN_EXP_OFC_ATTN=min" "attn=mid|MXATTN_EXP_OFC_ATTN=mid"; do
  tag=${set%%|*}; envs=${set#*|}
  rm -f /tmp/ofc.db*
  env $envs MXATTN_CACHE=/tmp/ofc.db timeout 100 python3 $R/ofc_time.py "$tag" $P >> "$L/ofc_time.txt" 2>&1
  stamp "timed $tag rc=$?"
done
stamp "base again"; rm -f /tmp/ofc.db*; MXATTN_CACHE=/tmp/ofc.db timeout 100 python3 $R/ofc_time.py base2 $P >> "$L/ofc_time.txt" 2>&1
cat "$L/ofc_time.txt" >> "$S"
export CUDA_CACHE_DISABLE=1
for set in "base|" "prep=mid|MXATTN_EXP_OFC_PREP=mid" "prep=mid,attn=min|MXATTN_EXP_OFC_PREP=mid MXATTN_EXP_OFC_ATTN=min"; do
  tag=${set%%|*}; envs=${set#*|}
  for rep in 1; do
    line="$tag rep $rep"
    for f in f16 int8-f16 int8-fp8 nvfp4 mxfp4 nvfp4-int8qk; do
      for d in 64 128 256; do
        ms=$(env $envs $B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
        line+=" $f/$d=${ms:-fail}"
      done
    done
    stamp "cold compile (ms) $line"
  done
done
finish_call
exit 0
