#!/usr/bin/env bash
# Session 19, call 5: the session's last code, end to end.
#  1. A first plan in a fresh process, cold (CUDA_CACHE_DISABLE=1, empty database): `mxattn run`'s
#     plan line (the device's start, the source, NVRTC, the module load) and the process's wall
#     time, every family at D=64/128/256.
#  2. The bench of issue #7's shapes and N=1024 (f16 and int8-fp8, D 64/128, causal and not)
#     beside SDPA cuDNN and flash, 5 rounds sharing 1 s a row, clocks logged.  Prediction: as
#     call 1 (the quant split measured level at N >= 4096), int8-fp8 N=1024 ~2% slower.
# ~5 min; timeout_s 420; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
for f in f16 int8-fp8 int8-f16 nvfp4 mxfp4 nvfp4-int8qk; do
  line="first plan $f:"
  for d in 64 128 256; do
    s0=$(date +%s%N)
    out=$(CUDA_CACHE_DISABLE=1 MXATTN_CACHE=/tmp/first_${f}_${d}.db $B/mxattn run --family $f --head-dim $d --seq 1024 --batch 1 --heads 8 --check-heads 0 --reps 1 2>&1)
    s1=$(date +%s%N)
    line+=" D=$d $(echo "$out" | awk '/^plan  / {print $2 "ms(nvrtc " $5 ")"}') process $(( (s1 - s0) / 1000000 ))ms;"
  done
  stamp "$line"
done
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-cudnn,sdpa-flash --rounds 5 --rep-ms 1000 --clocks" \
  BENCH_TIMEOUT=300 MXATTN_BUILD=$B OUT=$L/full bash scripts/device.sh --bench > "$L/full.log" 2>&1
stamp "full: $(grep '^## bench' "$L/full.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn|sdpa-flash) " "$L/full/bench/results.md" 2>/dev/null | cut -d'|' -f2-9 >> "$S"
finish_call
exit 0
