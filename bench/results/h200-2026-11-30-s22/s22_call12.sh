#!/usr/bin/env bash
# Session 22, call 12: call 11's v2 (a running last count, += 4*live every STAGES tiles) read
# -2.2% at D=128 N=4096 and +0.5% at N=16384 in bursts.  Under the cap, beside cuDNN: two benches
# of int8-fp8 D=128 non-causal, the tree's templates and v2's, alternating (base, v2, base, v2),
# and v2's sanitizers.  ~2.5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
V2=$PWD/$B/tpl/v2/templates
C3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
MXATTN_TEMPLATE_DIR=$V2 sanitize_each "" <<EOR
$C3|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2
EOR
for run in base1 v2a base2 v2b; do
  tdir=$PWD/templates; [[ $run == v2* ]] && tdir=$V2
  MXATTN_TEMPLATE_DIR=$tdir BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 5 --rep-ms 1000 --clocks" \
    BENCH_TIMEOUT=60 MXATTN_BUILD=$B OUT=$L/$run bash scripts/device.sh --bench > "$L/$run.log" 2>&1
  stamp "bench $run: $(grep '^## bench' "$L/$run.log")"
  grep -E "^\| (int8-fp8|sdpa-cudnn) " "$L/$run/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
done
finish_call
exit 0
