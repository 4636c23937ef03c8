#!/usr/bin/env bash
# Session 22, call 10: the shared ring's release test without a division.  Each warp, every
# tile, tested count % (4 * live) == 4 * live - 1, a remainder by a run-time value (PTX rem.u32:
# ~20 SASS instructions, seen in call 2's profile as I2F.U32.RP / IMAD.HI / ... on 950272 warp-tiles);
# now count == 4 * live * (t / STAGES + 1) - 1 (a multiply-high by a constant).  Prediction: ~3-4%
# fewer instructions a warp-tile (~496), so -1 to -3% at D=128 and D=64 if issue-bound, with
# ptxas's schedule (+-4%, calls 4-7) as the risk.  A/B against the session's start (3 rounds), the
# GPU tests of the shared ring and the pair, sanitizers, then the int8-fp8 bench beside cuDNN.
# ~5 min; timeout_s 420; carry build-gpu (tpl/HEAD = the templates before this change).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
OLD=$PWD/$(ls -d $B/tpl/*/templates | head -1)
for round in 1 2 3; do
  for v in "new|$PWD/templates" "old|$OLD"; do
    IFS='|' read -r name tdir <<< "$v"
    for shape in "128 4096 50" "128 16384 10" "64 16384 10"; do
      set -- $shape
      t=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 --head-dim $1 --seq $2 --batch 4 --heads 32 --reps $3 --check-heads 0 2>&1 | grep -E "^time" | tr -s ' ')
      stamp "round $round $name D=$1 N=$2: $t"
    done
  done
done
C3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
C4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1"
sanitize_each "" <<EOR
$C3|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2
$C4|--family int8-fp8 --head-dim 64 --seq-q 1100 --seq-k 900 --batch 1 --heads 2 --kv-heads 1
EOR
for f in shared_ring cluster; do
  timeout 100 $B/tests/gpu_int8_wgmma "*$f*" > "$L/gpu_$f.log" 2>&1
  stamp "gpu_int8_wgmma *$f* rc=$?: $(grep -E '^\[ +(OK|FAILED|PASSED) ' "$L/gpu_$f.log" | tr -s ' ' | tr '\n' ' ')"
done
BENCH_ARGS="--families int8-fp8 --dims 128,64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=$((400 - SECONDS)) MXATTN_BUILD=$B OUT=$L/b8 bash scripts/device.sh --bench > "$L/b8.log" 2>&1
stamp "bench int8-fp8: $(grep '^## bench' "$L/b8.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn) " "$L/b8/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
finish_call
exit 0
