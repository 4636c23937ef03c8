#!/usr/bin/env bash
# Session 23, call 6: the merged-turn ring (branch ring-merged, d48eb5d: overlap=3's turns
# become one a tile, P(t-1) V(t-1) issued, waited for and folded, then S(t) issued, the token
# passed there; a warpgroup's softmax then has two whole turns, ~1000 tensor clocks at D=128,
# where overlap=3 gave it two half turns, ~512).  Prediction: if the three-way "sum" (tensor
# 51% + MUFU 51%, call 4) is the warpgroups running in step, 700-900 clocks a tile against the
# shared ring's ~1100: -20 to -35% at D=128 N=16384; if the softmax's own latency paces it, level
# with or slower than the shared ring.  (1) gpu_int8_wgmma test_ring and `mxattn run` checks,
# sanitizers; (2) A/B (3 rounds, `mxattn run --reps`): the default shared ring, overlap=3 as on
# main, overlap=3 merged; (3) bench beside cuDNN with the merged ring pinned.  ~4 min; carry
# build-gpu (prepare_gpu_build.sh main d48eb5d).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
MAIN=$PWD/$B/tpl/main/templates; MERGED=$PWD/$B/tpl/d48eb5d/templates
R3="variant=wgmma overlap=3 block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
MXATTN_TEMPLATE_DIR=$MERGED timeout 120 $B/tests/gpu_int8_wgmma "*test_ring*" > "$L/gpu_ring.log" 2>&1
stamp "gpu_int8_wgmma *test_ring* (merged) rc=$?: $(grep -E '^\[ +(OK|FAILED|PASSED) ' "$L/gpu_ring.log" | tr -s ' ' | tr '\n' ' ')"
for args in "--head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2 --causal bottom-right" \
            "--head-dim 128 --seq 4096 --batch 1 --heads 4" "--head-dim 64 --seq-q 700 --seq-k 3000 --batch 2 --heads 3"; do
  for v in "merged|$MERGED|$R3" "default|$MAIN|"; do
    IFS='|' read -r name tdir cfg <<< "$v"
    out=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 $args --reps 1 ${cfg:+--config "$cfg"} 2>&1 < /dev/null)
    stamp "check $name rc=$? $args | $(grep -E '^error' <<< "$out" | tr -s ' ')"
  done
done
MXATTN_TEMPLATE_DIR=$MERGED sanitize_each "" <<EOR
$R3|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2 --causal bottom-right
EOR
for round in 1 2 3; do
  for v in "shared|$MAIN|" "ring3|$MAIN|$R3" "merged|$MERGED|$R3"; do
    IFS='|' read -r name tdir cfg <<< "$v"
    for shape in "128 4096 50" "128 16384 10" "64 16384 10"; do
      set -- $shape
      t=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 --head-dim $1 --seq $2 --batch 4 --heads 32 --reps $3 --check-heads 0 ${cfg:+--config "$cfg"} 2>&1 < /dev/null | grep -E "^time" | tr -s ' ')
      stamp "round $round $name D=$1 N=$2: $t"
    done
  done
done
MXATTN_TEMPLATE_DIR=$MERGED BENCH_ARGS="--families int8-fp8 --extra int8-fp8[$R3] --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 5 --rep-ms 1000 --clocks" \
  BENCH_TIMEOUT=$((500 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench bash scripts/device.sh --bench > "$L/bench.log" 2>&1
stamp "bench: $(grep '^## bench' "$L/bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/bench/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 >> "$S"
finish_call
exit 0
