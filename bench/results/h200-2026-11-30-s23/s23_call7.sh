#!/usr/bin/env bash
# Session 23, call 7: call 6's merged ring (branch ring-merged, d48eb5d) read 2.5% faster than
# the default shared ring at D=128 N=16384 in bursts (18.55-18.64 vs 19.01-19.04 ms) and 2.5%
# slower at N=4096.  Under the cap, beside cuDNN: (1) the bench at D=128 N=4096 and 16384
# (non-causal) with the merged ring pinned as an extra row, 7 rounds, 1200 ms a row; (2) the
# sustained probe of cuDNN, the default and the merged ring at the same shapes.  Prediction:
# the merged ring 1-3% faster than the default at N=16384 (1.46-1.48x), slower at N=4096.
# ~2.5 min; carry build-gpu (prepare_gpu_build.sh main d48eb5d).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
MERGED=$PWD/$B/tpl/d48eb5d/templates
R3="variant=wgmma overlap=3 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
MXATTN_TEMPLATE_DIR=$MERGED EXTRA_ROWS="int8-fp8[$R3]" BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=150 MXATTN_BUILD=$B OUT=$L/bench bash scripts/device.sh --bench > "$L/bench.log" 2>&1
stamp "bench: $(grep '^## bench' "$L/bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/bench/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 >> "$S"
MXATTN_TEMPLATE_DIR=$MERGED timeout 100 python3 bench/micro/sustained_power.py --seqs 16384,4096 --seconds 3 \
  --impls "sdpa-cudnn;int8-fp8;int8-fp8[$R3]" > "$L/power.md" 2>&1
stamp "sustained_power rc=$?"; cat "$L/power.md" >> "$S"
finish_call
exit 0
