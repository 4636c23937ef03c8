#!/usr/bin/env bash
# Session 9, device call 4 (the last): HEAD's stats pass (8-byte loads, four keys a warp load)
# and six-block quant bound at D=32/64 against call 2's code (tpl/call2): the kernels' times (ncu)
# and end to end; every GPU correctness test on HEAD's build in parallel (gpu_int8: both passes
# bit for bit); the bench of the issue's shapes beside SDPA flash and cuDNN.
# Prepare: build-gpu from build-dev; scripts/ab_templates.sh build-gpu b73f505, renamed tpl/call2.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
tpl() { [ "$1" = head ] && echo "" || echo "$B/tpl/$1/templates"; }
timed() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 60 $B/mxattn run "$@" --reps 100 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}'; }
# 1. Kernel times and end to end (~80 s).
for v in call2 head; do
  for a in "int8-fp8 128" "int8-fp8 64" "int8-f16 64"; do set -- $a
    MXATTN_TEMPLATE_DIR=$(tpl $v) timeout 40 ncu --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:'_quant$|_stats$' -c 2 \
      $B/mxattn run --family $1 --head-dim $2 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 > "$L/ncu_${v}_$1_$2.log" 2>&1
    echo "$v $1 D$2 stats/quant us,regs: $(grep -A8 -E '_stats|_quant' "$L/ncu_${v}_$1_$2.log" | grep -E 'gpu__time|registers' | awk '{print $NF}' | tr '\n' ' ')" >> "$S"
  done
done
for r in 1 2; do for v in call2 head; do
  echo "int8-fp8 D128 N4096 r$r $v $(timed "$(tpl $v)" --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32)" >> "$S"
  echo "int8-fp8 D64 N4096 r$r $v $(timed "$(tpl $v)" --family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32)" >> "$S"
done; done
# 2. Every GPU correctness test on HEAD's build, in parallel (~210 s).  Exit 77 is a skip.
for t in gpu_driver gpu_f16 gpu_fp4 gpu_int8 gpu_int8_wgmma gpu_wgmma; do
  ( timeout 240 $B/tests/$t > "$L/$t.log" 2>&1; echo "$t rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" >> "$S" ) &
done
wait
# 3. The issue's shapes beside SDPA flash and cuDNN.
timeout 230 python3 bench/attention.py --families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both \
  --baselines sdpa-flash,sdpa-cudnn --rounds 2 --out "$L/bench" > "$L/bench.log" 2>&1
echo "bench rc=$?" >> "$S"
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
grep -E "^\| (f16|int8-fp8) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-9
