#!/usr/bin/env bash
# Session 8, call 2: block_m=192 (three consumer warpgroups) for f16 and int8-fp8 at D<=64:
# their GPU tests, sanitizers, sustained runs, and the bench sweep beside cuDNN with clocks.
set -uo pipefail
B=build-gpu; L=$OUT/logs; mkdir -p $L; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
t() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $L/$name.log 2>&1; echo "$name rc=$? $(( $(date +%s)-t0 ))s $(grep -cE '^\[  FAILED|FAIL' $L/$name.log) fail-lines" >> $S; }
t gpu_wgmma_three $B/tests/gpu_wgmma '*three*'
t gpu_int8_wgmma_three $B/tests/gpu_int8_wgmma '*three*'
F192="variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=2"
I192="variant=wgmma block_m=192 warps=16 block_n=128 stages=2"
for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family int8-fp8 --head-dim 64 --seq-q 333 --seq-k 500 \
    --batch 1 --heads 2 --causal bottom-right --config "$I192" --reps 1 --check-heads 0 > $L/san_$tool.log 2>&1
  echo "sanitize int8-fp8 192 $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san_$tool.log | tr '\n' ' ')" >> $S
done
timeout 60 compute-sanitizer --tool synccheck --error-exitcode 9 $B/mxattn run --family f16 --head-dim 64 --seq-q 333 --seq-k 500 \
  --batch 1 --heads 2 --config "$F192" --reps 1 --check-heads 0 > $L/san_f16_sync.log 2>&1
echo "sanitize f16 192 synccheck rc=$? $(grep -E 'ERROR SUMMARY' $L/san_f16_sync.log)" >> $S
# Sustained runs (best / mean of 100): the default against 192-row blocks, interleaved.
for r in 1 2; do
  for fam in f16 int8-fp8; do
    cfg=$([ $fam = f16 ] && echo "$F192" || echo "$I192")
    for side in default 192; do
      extra=(); [ $side = 192 ] && extra=(--config "$cfg")
      ms=$(timeout 90 $B/mxattn run --family $fam --head-dim 64 --seq 16384 --batch 4 --heads 32 --reps 100 --check-heads 0 "${extra[@]}" 2>&1 | awk '/^time/ {print $2, $5}')
      echo "sustained $fam D64 N16384 r$r $side ${ms:-failed}" >> $L/ab.txt
    done
  done
done
# The sweep: every 192-row table beside the defaults and cuDNN, clocks and power per row.
X="f16[variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=2],f16[variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=3],f16[variant=wgmma q_regs=0 block_m=192 warps=12 block_n=128 stages=2],int8-fp8[variant=wgmma block_m=192 warps=16 block_n=128 stages=2],int8-fp8[variant=wgmma block_m=192 warps=12 block_n=128 stages=3],int8-fp8[variant=wgmma block_m=192 warps=16 block_n=64 stages=3]"
timeout 330 python3 bench/attention.py --families f16,int8-fp8 --dims 64 --seqs 4096,16384 --causal both \
  --baselines sdpa-cudnn --rounds 2 --clocks --extra "$X" --out $L/sweep > $L/sweep.log 2>&1
echo "bench sweep rc=$?" >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S; cat $L/ab.txt
python3 - $L/sweep/results.json <<'PY'
import json,sys
for r in json.load(open(sys.argv[1])):
    print(r['family'][:60].ljust(60), r['seq_len'], int(r['causal']), r['tops'], r.get('ratio_vs_cudnn'), r.get('sm_mhz'), r.get('power_w'), r.get('error') or '')
PY
