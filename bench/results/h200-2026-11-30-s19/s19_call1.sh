#!/usr/bin/env bash
# Session 19, call 1: the GPU suite on main (session 18's last two review commits were not run
# on a GPU), then the bench's spread: three long runs of int8-fp8 at issue #7's three targets
# (9 rounds sharing 1.5 s a row, clocks logged: session 18's call 6) and one run of every #7
# shape (f16 and int8-fp8, D 64/128, N 4096/16384, causal and not) beside SDPA cuDNN and flash;
# last, cold compiles (CUDA_CACHE_DISABLE=1) of every family at D=64/128/256, the baseline of
# this session's cold-JIT work.  Prediction: int8-fp8 D=128 N=4096 reads 1.20-1.25x in each run.
# ~8 min; timeout_s 590; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 240 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
for run in 1 2 3; do
  BENCH_ARGS="--families int8-fp8 --dims 128,64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
    BENCH_TIMEOUT=110 MXATTN_BUILD=$B OUT=$L/run$run bash scripts/device.sh --bench > "$L/run$run.log" 2>&1
  stamp "run $run: $(grep '^## bench' "$L/run$run.log")"
  grep -E "^\| (int8-fp8|sdpa-cudnn) " "$L/run$run/bench/results.md" 2>/dev/null | cut -d'|' -f2-9 >> "$S"
done
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn,sdpa-flash --rounds 5 --rep-ms 1000 --clocks" \
  BENCH_TIMEOUT=200 MXATTN_BUILD=$B OUT=$L/full bash scripts/device.sh --bench > "$L/full.log" 2>&1
stamp "full: $(grep '^## bench' "$L/full.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn|sdpa-flash) " "$L/full/bench/results.md" 2>/dev/null | cut -d'|' -f2-9 >> "$S"
export CUDA_CACHE_DISABLE=1
line="cold compile (ms)"
for f in f16 int8-f16 int8-fp8 nvfp4 mxfp4 nvfp4-int8qk; do
  for d in 64 128 256; do
    ms=$($B/mxattn compile --family $f --head-dim $d 2>&1 | awk '/^compile/ {print $2}')
    line+=" $f/$d=${ms:-fail}"
  done
done
stamp "$line"
finish_call
exit 0
