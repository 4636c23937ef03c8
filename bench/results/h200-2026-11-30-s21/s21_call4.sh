#!/usr/bin/env bash
# Session 21, call 4: bench/attention.py on call 3's tuned database (plans take the tuned
# configurations), every #7 shape beside SDPA cuDNN and flash in one run, and the one-warpgroup
# D<=64 tile as an extra row (the tuner put the four-consumer ring first at D=64 N=4096 by 2.3%,
# where s20's bench had it 3% slower).  Prediction: ratios as s20's final run (int8-fp8 D=128
# 1.45-1.50 at N=16384, 1.21-1.26 at N=4096; D=64 1.31-1.34; f16 1.0-1.06 / 0.96-1.09).
# ~5 min; timeout_s 430; carry build-gpu (with build-gpu/tuned.db).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
cp $B/tuned.db /tmp/mx.db
ONE4="variant=wgmma blocks_per_sm=4 rowsum_mma=1 block_m=64 block_n=128 warps=4 stages=3"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn,sdpa-flash --rounds 5 --rep-ms 1000 --clocks" \
  EXTRA_ROWS="int8-fp8[$ONE4]" BENCH_TIMEOUT=$((410 - SECONDS)) MXATTN_BUILD=$B OUT=$L/full bash scripts/device.sh --bench > "$L/full.log" 2>&1
stamp "full: $(grep '^## bench' "$L/full.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn|sdpa-flash)" "$L/full/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 | sed "s/\[$ONE4\]/[one-wg x4]/" >> "$S"
finish_call
exit 0
