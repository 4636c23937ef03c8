#!/usr/bin/env bash
# Session 20, call 3: the shared ring as int8-fp8's default above D=64 without a mask.  The GPU
# suite (its int8-fp8 defaults at D 65-128 now run KERNEL_SHARED), compute-sanitizer on the new
# defaults, what `mxattn tune` keeps at D=128 N=4096/16384, and the bench of int8-fp8's #7 shapes
# with the old default as a pinned row.  Prediction: suite passes; bench as call 2 (shared 1.45-1.48x
# at D=128 N=16384, 1.21-1.24x at N=4096); the tuner, timing 20-launch medians after one warm-up,
# may keep either at N=16384 (call 1's means of 50 launches were level).
# ~9 min; timeout_s 595; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 230 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
sanitize_each "" <<EOR
|--family int8-fp8 --head-dim 128 --seq-q 700 --seq-k 900 --batch 1 --heads 2
|--family int8-fp8 --head-dim 96 --seq-q 130 --seq-k 1500 --batch 1 --heads 4 --kv-heads 2 --layout bnhd
EOR
timeout 100 $B/mxattn tune --family int8-fp8 --head-dims 128 --seqs 4096,16384 --causal no --batch 4 --heads 32 \
  --max-candidates 5 > "$L/tune.log" 2>&1
stamp "tune rc=$?"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
OLD="variant=wgmma block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1"
MXATTN_CACHE=/tmp/mx-defaults.db BENCH_ARGS="--families int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 5 --rep-ms 1000 --clocks" \
  EXTRA_ROWS="int8-fp8[$OLD]" BENCH_TIMEOUT=$((580 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench bash scripts/device.sh --bench > "$L/bench.log" 2>&1
stamp "bench: $(grep '^## bench' "$L/bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/bench/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$OLD\]/[old default]/" >> "$S"
finish_call
exit 0
