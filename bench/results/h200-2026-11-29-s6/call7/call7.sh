#!/usr/bin/env bash
# Session 6, device call 7: branch rotated-turns (f16 turns closed at the next turn's head):
# gpu_wgmma and gpu_f16, sanitizers, A/B against main's templates, the final bench.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
timeout 140 ctest --test-dir $B -R 'gpu_wgmma|gpu_f16' -j2 -V --timeout 130 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
PP="variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 block_n=128 stages=2"
for cfg in "$PP persistent=1" "$PP"; do for tool in memcheck racecheck synccheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 --batch 12 --heads 4 \
    --seq-q 300 --seq-k 200 --causal bottom-right --config "$cfg" --reps 2 > $L/san.log 2>&1
  echo "sanitize [$cfg] $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san.log | tr '\n' ' ')" >> $S
done; done
P="variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 persistent=1 block_n=128 stages=3"
for r in 1 2; do for v in 0 1; do
  TD=""; [ $v = 0 ] && TD=$B/tpl0/templates
  while read -r args; do
    t=$(eval MXATTN_TEMPLATE_DIR=$TD timeout 60 $B/mxattn run $args --heads 32 --reps 50 --check-heads 0 --config "'$P'" 2>&1 | grep -E "^time" | awk '{print $2, $5}')
    echo "r$r v$v $args : $t" >> $L/ab.txt
  done <<'ARGS'
--family f16 --head-dim 128 --seq 4096 --batch 4
--family f16 --head-dim 128 --seq 4096 --batch 4 --causal top-left
--family f16 --head-dim 128 --seq 16384 --batch 1
ARGS
done; done
timeout 120 python3 bench/attention.py --families "f16,int8-fp8" --dims 128,64 --seqs 4096,16384 \
  --baselines sdpa-cudnn,sdpa-flash --rounds 4 --out $L/final > $L/final.log 2>&1; echo "bench final rc=$?" >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S $L/ab.txt
echo "== final"; grep -E "^\| " $L/final/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
