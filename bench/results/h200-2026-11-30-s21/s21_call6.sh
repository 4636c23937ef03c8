#!/usr/bin/env bash
# Session 21, call 6: the partial row blocks last (blocks/wgmma_common.lua BLOCK_SETUP: without a
# mask, where BM does not divide seq_q, each head's last row block runs after every full one).
# Prediction (list scheduling of B=4 H=32 on 132 SMs): the attention kernel -2% at N=4096
# (int8-fp8 D=128 block_m=192; f16 D=64 block_m=192), -0.5% at N=16384; the bench's ratios
# +1.5-2% at N=4096.  Risk: the tail blocks read their heads' K/V from DRAM (no longer just
# after the head's other blocks).  Checks, the GPU suite, an A/B against 0772449's templates
# (mxattn run, 3 rounds of 50 launches), then the bench beside cuDNN.
# ~6.5 min; timeout_s 480; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
while IFS='|' read -r args; do
  r=$(timeout 60 $B/mxattn run $args --reps 2 --check-heads 3 2>&1 | grep -E "^error|fail" | tr -s ' ' | tr '\n' ' ')
  stamp "check $args | $r"
done <<EOR
--family int8-fp8 --head-dim 128 --seq-q 1000 --seq-k 4096 --batch 2 --heads 4 --kv-heads 2
--family int8-fp8 --head-dim 128 --seq 4100 --batch 3 --heads 2
--family f16 --head-dim 64 --seq-q 1000 --seq-k 1500 --batch 2 --heads 3
--family f16 --head-dim 64 --seq 4096 --batch 2 --heads 2 --causal bottom-right --seq-q 1000
--family int8-fp8 --head-dim 64 --seq 9000 --batch 1 --heads 2
EOR
sanitize_each "variant=wgmma" <<EOR
block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1|--family int8-fp8 --head-dim 128 --seq-q 450 --seq-k 700 --batch 2 --heads 3
EOR
(cd $B && timeout 250 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
AB_TEMPLATES="- $B/tpl/0772449fdceb1b2887b89e12a87ee0e68876ac58/templates" AB_ROUNDS=3 AB_RUNS="--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32" MXATTN_BUILD=$B OUT=$L/ab bash scripts/device.sh --ab > "$L/ab.log" 2>&1
grep "median best" "$L/ab.log" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 5 --rep-ms 1000 --clocks" \
  BENCH_TIMEOUT=$((460 - SECONDS)) MXATTN_BUILD=$B OUT=$L/full bash scripts/device.sh --bench > "$L/full.log" 2>&1
stamp "full: $(grep '^## bench' "$L/full.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn)" "$L/full/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 >> "$S"
finish_call
exit 0
