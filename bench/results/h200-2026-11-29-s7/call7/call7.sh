#!/usr/bin/env bash
# Session 7, device call 7: branch split-tail (the non-causal persistent f16 kernel's last wave split
# along the keys): gpu_wgmma, sanitizers on a split problem, A/B against main, f16 D=128 bench.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
timeout 130 ctest --test-dir $B -R 'gpu_wgmma' -V --timeout 125 > $L/ctest.log 2>&1; rc=$?; echo "ctest rc=$rc" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)|persistent" $L/ctest.log | head -20 >> $S
SPLIT="--batch 7 --heads 19 --seq-q 16 --seq-k 2000 --check-heads 19"
echo "run split: $(timeout 60 $B/mxattn run --family f16 --head-dim 128 $SPLIT --reps 3 2>&1 | grep -E 'error' | tr '\n' ' ')" >> $S
for tool in memcheck racecheck synccheck; do
  timeout 35 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 $SPLIT --reps 2 --check-heads 0 > $L/san.log 2>&1
  echo "  sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san.log | tr '\n' ' ')" >> $S
done
RUNS="--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family f16 --head-dim 128 --seq 16384 --batch 1 --heads 32"
for r in 1 2 3; do
  for tpl in main split; do
    dir=$B/tpl/main/templates; [ $tpl = split ] && dir=""
    while read -r args; do
      t=$(MXATTN_TEMPLATE_DIR=$dir timeout 40 $B/mxattn run $args --reps 50 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
      echo "r$r $tpl ${t:-failed} $args" >> $L/ab.txt
    done <<< "$RUNS"
  done
done
if [ $rc = 0 ]; then
  timeout 80 python3 bench/attention.py --families f16 --dims 128 --seqs 4096,16384 --causal both \
    --baselines sdpa-cudnn --rounds 3 --out $L/f16 > $L/f16.log 2>&1; echo "bench rc=$?" >> $S
fi
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
awk '{k=$2; for(i=5;i<=NF;i++) k=k" "$i; v[k]=v[k]" "$3} END{for(k in v) print v[k], "|", k}' $L/ab.txt | sort -t'|' -k2
grep -E "^\| " $L/f16/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
