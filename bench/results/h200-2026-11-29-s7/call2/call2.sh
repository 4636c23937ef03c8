#!/usr/bin/env bash
# Session 7, device call 2: the persistent f16 kernel writing each unit's output under the next
# unit's first S product (+ write_output's sums before its stores): gpu tests, a unit with no key,
# sanitizers, A/B against main's templates; exp_poly for f16 D=64 (template copy tpl/poly); bench.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
timeout 170 ctest --test-dir $B -R 'gpu_wgmma|gpu_f16' -j2 -V --timeout 160 > $L/ctest.log 2>&1; rc=$?; echo "ctest rc=$rc" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
# Units that see no key (rows 0..299 of seq_q 400 see nothing under bottom-right causal with seq_k 100).
for args in "--seq-q 400 --seq-k 100 --causal bottom-right --batch 3 --heads 4 --check-heads 4" \
            "--seq-q 300 --seq-k 200 --causal bottom-right --batch 12 --heads 4 --check-heads 4" \
            "--seq 1000 --batch 2 --heads 8 --check-heads 8"; do
  echo "run $args: $(timeout 60 $B/mxattn run --family f16 --head-dim 128 $args --reps 3 2>&1 | grep -E 'check|error|time' | tr '\n' ' ')" >> $S
  for tool in memcheck racecheck synccheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 $args --reps 2 > $L/san.log 2>&1
    echo "  sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san.log | tr '\n' ' ')" >> $S
  done
done
RUNS="--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32 --causal top-left
--family f16 --head-dim 128 --seq 16384 --batch 1 --heads 32
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32"
D64="variant=wgmma q_regs=0 block_m=64 warps=4 stages=2 block_n=128"
POLY="--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --config '$D64 exp_poly=0'
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --config '$D64 exp_poly=1'
--family f16 --head-dim 64 --seq 4096 --batch 4 --heads 32 --config '$D64 exp_poly=2'
--family f16 --head-dim 64 --seq 16384 --batch 1 --heads 32 --config '$D64 exp_poly=0'
--family f16 --head-dim 64 --seq 16384 --batch 1 --heads 32 --config '$D64 exp_poly=1'"
for r in 1 2 3; do
  for tpl in $B/tpl/main/templates ""; do
    while read -r args; do
      t=$(eval MXATTN_TEMPLATE_DIR=$tpl timeout 60 $B/mxattn run $args --reps 50 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
      echo "r$r ${tpl:-new} ${t:-failed} $args" >> $L/ab.txt
    done <<< "$RUNS"
  done
  while read -r args; do
    t=$(eval MXATTN_TEMPLATE_DIR=$B/tpl/poly/templates timeout 60 $B/mxattn run $args --reps 50 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
    echo "r$r poly ${t:-failed} $args" >> $L/ab.txt
  done <<< "$POLY"
done
# The poly kernels checked against the CPU once.
echo "poly check: $(MXATTN_TEMPLATE_DIR=$B/tpl/poly/templates timeout 60 $B/mxattn run --family f16 --head-dim 64 --seq 1000 --batch 2 --heads 4 --check-heads 4 --config "$D64 exp_poly=2" 2>&1 | grep -E 'check|error' | tr '\n' ' ')" >> $S
if [ $rc = 0 ]; then
  timeout 200 python3 bench/attention.py --families "f16,int8-fp8" --dims 128,64 --seqs 4096,16384 \
    --baselines sdpa-cudnn,sdpa-flash --rounds 3 --out $L/final > $L/final.log 2>&1; echo "bench final rc=$?" >> $S
fi
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
awk '{k=$2; for(i=5;i<=NF;i++) k=k" "$i; v[k]=v[k]" "$3} END{for(k in v) print v[k], "|", k}' $L/ab.txt | sort -t'|' -k2
echo "== final"; grep -E "^\| " $L/final/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
