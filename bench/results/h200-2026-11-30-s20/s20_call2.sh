#!/usr/bin/env bash
# Session 20, call 2: call 1's bench ratios (int8-fp8 1.405x at D=128 N=4096, 1.413x at N=16384,
# the shared-ring kernel 1.519x there) ran on a GPU drawing at most ~575 W where sessions 16-19
# saw 700 W; so first the board's power limits, then every #7 shape in one run (f16, int8-fp8,
# the shared-ring row) beside cuDNN and flash, then a second int8-fp8 run for the spread.
# Prediction: the shared row 5-8% faster than the default at D=128 N=16384, slower at N=4096.
# ~7 min; timeout_s 590; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE > "$L/smi.txt" 2>&1
stamp "power: $(grep -E 'Current Power Limit|Requested Power Limit|Default Power Limit|Max Power Limit|Enforced' "$L/smi.txt" | tr -s ' ' | sort -u | tr '\n' ';')"
SH3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn,sdpa-flash --rounds 7 --rep-ms 1400 --clocks" \
  EXTRA_ROWS="int8-fp8[$SH3]" BENCH_TIMEOUT=330 MXATTN_BUILD=$B OUT=$L/full bash scripts/device.sh --bench > "$L/full.log" 2>&1
stamp "full: $(grep '^## bench' "$L/full.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/full/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
  EXTRA_ROWS="int8-fp8[$SH3]" BENCH_TIMEOUT=$((570 - SECONDS)) MXATTN_BUILD=$B OUT=$L/run2 bash scripts/device.sh --bench > "$L/run2.log" 2>&1
stamp "run2: $(grep '^## bench' "$L/run2.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn) " "$L/run2/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
finish_call
exit 0
