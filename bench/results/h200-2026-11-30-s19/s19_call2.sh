#!/usr/bin/env bash
# Session 19, call 2: the INT8 quant kernel split in two (quant_q, quant_kv), for cold JIT.
#  1. ctest -L gpu (gpu_int8 runs every kernel but attention: the quantizers bit for bit, PDL
#     same bits as plain launches through the four-kernel chain);
#  2. compute-sanitizer memcheck/racecheck/synccheck of split plans (fuse_q, D=256, int8-f16);
#  3. A/B of the call time, templates before (tpl/HEAD, one quant kernel) and after, 3 rounds;
#  4. cold compile (CUDA_CACHE_DISABLE=1) of the INT8 families before and after, twice.
# Prediction: calls level at N>=4096 (+-0.5%), N=1024 +0.5 to +1.5% (one more kernel
# boundary); cold compile int8-fp8 D=256 ~1.4 -> ~0.9 s, D=64/128 -25 to -40%.
# ~7 min; timeout_s 560; carry build-gpu (prepared with scripts/prepare_gpu_build.sh HEAD).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
OLD=$B/tpl/HEAD/templates
stamp start
(cd $B && timeout 240 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
sanitize_each "variant=wgmma" <<'LINES'
fuse_q=1 block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
block_m=64 warps=4 block_n=64 stages=2|--family int8-fp8 --head-dim 256 --seq-q 130 --seq-k 300 --batch 1 --heads 2 --kv-heads 1
block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 1100 --seq-k 1100 --batch 1 --heads 4 --kv-heads 2 --causal top-left
LINES
sanitize_each "" <<'LINES'
block_m=64 warps=4 block_n=64 stages=2|--family int8-f16 --head-dim 128 --seq-q 200 --seq-k 333 --batch 2 --heads 2 --kv-heads 1 --causal top-left
LINES
export AB_TEMPLATES="$OLD -" AB_ROUNDS=3 AB_RUNS="--family int8-fp8 --head-dim 128 --seq 1024 --batch 4 --heads 32
--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32
--family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 256 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --causal top-left
--family int8-f16 --head-dim 128 --seq 4096 --batch 4 --heads 32"
MXATTN_BUILD=$B OUT=$L/ab timeout 300 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"; grep -E "ab " "$L/ab.log" >> "$S"
[[ -f $L/ab/ab.txt ]] && ab_best "$L/ab/ab.txt"
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
