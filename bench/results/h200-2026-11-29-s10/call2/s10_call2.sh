#!/usr/bin/env bash
# Session 10's second device call (the first, `s10_first_call.sh check`, ran past its 600 s: no
# summary came back; its logs showed the V loads serialized, fixed in 663d9d7).  ~8 min, run
# with timeout_s 600; everything inside stops by 540 s so the logs always come back.
#   1. quant kernel time and registers (ncu, scripts/device.sh --kernel-times), then end to end
#      (--ab): OLD (main before 663d9d7), NEW (main), LIVE1 (quant-live-words~2 on NEW: padding
#      codes a word at a time), LIVE (quant-live-words: + V by div_by_scale + quantize_rows<HAS_MEAN>).
#   2. every GPU test binary on NEW in parallel, p_fold's two replays, gpu_int8 under LIVE1.
# Prepare here: build-dev built from main, then
#   rm -rf build-gpu && cp -a build-dev build-gpu && find build-gpu -name '*.o' -delete
#   rm -rf build-gpu/tests/test_* build-gpu/libmxattn.a build-gpu/tpl build-gpu/oldtpl build-gpu/micro
#   scripts/ab_templates.sh build-gpu main~1 main quant-live-words~2 quant-live-words
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
stamp() { echo "[$(date +%T) +$SECONDS s] $*" >> "$S"; }
OLD=$B/tpl/main_1/templates NEW=$B/tpl/main/templates LIVE1=$B/tpl/quant-live-words_2/templates LIVE=$B/tpl/quant-live-words/templates

work() {
  stamp start
  local runs=$'--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32\n--family int8-f16 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-f16 --head-dim 64 --seq 4096 --batch 4 --heads 32'
  AB_TEMPLATES="$OLD $NEW $LIVE1 $LIVE" KT_RUNS=$runs MXATTN_BUILD=$B OUT=$L/kt timeout 150 bash scripts/device.sh --kernel-times > "$L/kt.log" 2>&1
  grep '^## kt' "$L/kt.log" | sed 's#build-gpu/tpl/##; s#/templates##' >> "$S"; stamp kt done
  AB_TEMPLATES="$OLD $NEW $LIVE1 $LIVE" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab \
    AB_RUNS=$'--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32\n--family int8-f16 --head-dim 64 --seq 4096 --batch 4 --heads 32' \
    timeout 100 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
  grep '^## ab' "$L/ab.log" | sed 's#build-gpu/tpl/##; s#/templates##' >> "$S"; stamp ab done
  local t base left=$((530 - SECONDS))
  for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_int8_wgmma gpu_wgmma gpu_tune; do
    ( timeout $left $B/tests/$t > "$L/$t.log" 2>&1; stamp "$t rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" ) &
  done
  ( MXATTN_TEMPLATE_DIR=$LIVE1 timeout $left $B/tests/gpu_int8 > "$L/gpu_int8_LIVE1.log" 2>&1; stamp "gpu_int8 under LIVE1 rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_int8_LIVE1.log" | tail -1)" ) &
  for base in 1795988417 1795991000; do
    ( MXATTN_TEMPLATE_DIR=$NEW MXATTN_TEST_SEED=$base timeout 200 $B/tests/gpu_int8_wgmma test_head_dims > "$L/replay_$base.log" 2>&1
      stamp "p_fold replay $base rc=$? $(grep -E 'D=128 B=2 Hq=2 Hkv=2 Nq=1 ' "$L/replay_$base.log" | grep -oE '^(ok  |FAIL)|pipeline rel_l1 [0-9.e+-]+' | tr '\n' ' ')" ) &
  done
  wait
}
work
cd "$L" && tar -czf "$OUT/logs.tgz" . && cd - > /dev/null
cat "$S"
exit 0
