#!/usr/bin/env bash
# Session 22, call 5.  Call 4 read the default shared ring 4-6% slower with this session's
# templates than with 70107ff's, though their PTX differed only in where the first TMA copies sat
# (inline at the top, or moved past the loop).  KERNEL_SHARED now renders 70107ff's text exactly at
# cluster=1 (module PTX identical) and takes the pair's pieces as hooks.  (A) A/B against 70107ff:
# prediction level (same PTX).  (B) The pair's GPU tests and sanitizers again (its text moved).
# (C) Issue #7's bench, f16 and int8-fp8, beside cuDNN.  ~6 min; timeout_s 480; carry build-gpu.
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
sanitize_each "" <<EOR
$C3 cluster=2|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2 --causal bottom-right
EOR
for f in cluster shared_ring; do
  timeout 100 $B/tests/gpu_int8_wgmma "*$f*" > "$L/gpu_$f.log" 2>&1
  stamp "gpu_int8_wgmma *$f* rc=$?: $(grep -E '^\[ +(OK|FAILED|PASSED) ' "$L/gpu_$f.log" | tr -s ' ' | tr '\n' ' ')"
done
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=$((450 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench7 bash scripts/device.sh --bench > "$L/bench7.log" 2>&1
stamp "bench #7: $(grep '^## bench' "$L/bench7.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench7/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
cp "$L/bench7/bench/results.md" "$OUT/bench7_results.md" 2>/dev/null
finish_call
exit 0
