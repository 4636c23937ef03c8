#!/usr/bin/env bash
# Session 22, call 4: the final templates (cluster=2 off by default, ranked below its twin).
# (A) The default kernels against the session's first templates (70107ff): KERNEL_SHARED's
# cluster=1 path was rewritten around the pair (PTX: only the set-up differs); prediction level
# (+-0.5%).  (B) memcheck/racecheck/synccheck of the default shared ring (cluster=1) and of the pair.
# (C) `ctest -L gpu`.  ~6 min; timeout_s 480; carry build-gpu (tpl/<70107ff>).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
OLD=$PWD/$(ls -d $B/tpl/*/templates | head -1)
for round in 1 2 3; do
  for v in "new|$PWD/templates" "old|$OLD"; do
    IFS='|' read -r name tdir <<< "$v"
    for shape in "128 4096 50" "128 16384 10" "64 16384 10" "128 4096 50 --causal bottom-right"; do
      set -- $shape
      t=$(MXATTN_TEMPLATE_DIR=$tdir timeout 60 $B/mxattn run --family int8-fp8 --head-dim $1 --seq $2 --batch 4 --heads 32 --reps $3 ${4:-} ${5:-} --check-heads 0 2>&1 | grep -E "^time|^config" | tr -s ' ' | tr '\n' ' ' | cut -c1-200)
      stamp "round $round $name D=$1 N=$2 ${5:-}: $t"
    done
  done
done
C3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
C4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1"
sanitize_each "" <<EOR
$C3|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 700 --batch 1 --heads 2
$C4|--family int8-fp8 --head-dim 64 --seq-q 1100 --seq-k 900 --batch 1 --heads 2 --kv-heads 1
$C4 cluster=2|--family int8-fp8 --head-dim 64 --seq-q 1100 --seq-k 900 --batch 1 --heads 2 --kv-heads 1 --causal top-left
EOR
(cd $B && timeout 300 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "FAIL|Test +#" "$L/ctest.log" | head -12 >> "$S"
finish_call
exit 0
