#!/usr/bin/env bash
# Session 17, call 3: three small changes to the INT8 pre-passes, as template folders made from
# main (bench/NOTES.md, seventeenth session, says how), against main ("-"):
#   sv8    the stats kernel's lanes load 16 bytes (8 channels) where the plan's alignment allows,
#          not 8: half the load instructions, twice the bytes in flight a load;
#   u8     the stats kernel's key loop unrolled 8 times, not 4: twice the loads in flight;
#   qfirst the quant kernel's blocks take every Q unit of every batch first (then K/V in the
#          old order), so under PDL all of Q, not only batch 0's, runs beside the stats kernel.
# Prediction: the stats pass is bound by loads in flight (3.3 TB/s where the quant pass copies at
# 3.9): sv8 or u8 80 -> 65-72 us, the call -0.5 to -1% at D=128 N=4096; qfirst -0.3 to -0.8%.
#   1. `mxattn run` against the CPU at a ragged GQA shape under each folder;
#   2. A/B, 3 rounds, issue #7's int8-fp8 shapes and N=1024;
#   3. torch.profiler kernel times with MXATTN_PDL=0 under each folder.
# ~5 min; timeout_s 420. Prepare: scripts/prepare_gpu_build.sh main, then the folders; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
TPLS="- $B/tpl/sv8/templates $B/tpl/u8/templates $B/tpl/qfirst/templates"
for tpl in $TPLS; do
  dir=$tpl; [[ $tpl == - ]] && dir=""
  for args in "--family int8-fp8 --head-dim 128 --seq-q 300 --seq-k 1100 --batch 2 --heads 4 --kv-heads 2" \
              "--family int8-f16 --head-dim 72 --seq-q 1100 --seq-k 300 --batch 3 --heads 2"; do
    MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run $args --check-heads 2 --reps 2 > "$L/run.tmp" 2>&1
    stamp "run rc=$? ${tpl#$B/tpl/} $args | $(grep -E 'error' "$L/run.tmp" | head -1 | tr -s ' ')"
    cat "$L/run.tmp" >> "$L/runs.log"
  done
done
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 1024" "--head-dim 128 --seq 4096 --causal bottom-right" \
         "--head-dim 64 --seq 4096" "--head-dim 128 --seq 16384"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="$TPLS" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} \
  timeout 230 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##; s#build-gpu/tpl/##; s#/templates##' >> "$S"
for tpl in $TPLS; do
  dir=$tpl; [[ $tpl == - ]] && dir=""
  MXATTN_TEMPLATE_DIR=$dir MXATTN_PDL=0 timeout 60 python3 bench/profile_kernels.py --families int8-fp8 --dims 128 --seqs 1024,4096 > "$L/profile.tmp" 2>&1
  stamp "profile ${tpl#$B/tpl/} rc=$?: $(grep -E '^== |_quant$|_stats$' "$L/profile.tmp" | head -6 | sed -E 's#mxattn_int8_fp8_d[0-9]+_[0-9a-f]+##; s/ +/ /g' | tr '\n' ' ')"
  cat "$L/profile.tmp" >> "$L/profile.log"
done
rm -f "$L/run.tmp" "$L/profile.tmp"
finish_call
exit 0
