#!/usr/bin/env bash
# Session 7, device call 3: the persistent f16 kernel storing a unit's (packed) output after the next
# unit's first softmax (tpl/def2) vs main's templates; a check and two sanitizers on def2.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
export MXATTN_TEMPLATE_DIR=$B/tpl/def2/templates
for args in "--seq-q 400 --seq-k 100 --causal bottom-right --batch 3 --heads 4 --check-heads 4" "--seq 1000 --batch 2 --heads 8 --check-heads 8"; do
  echo "def2 run $args: $(timeout 60 $B/mxattn run --family f16 --head-dim 128 $args --reps 3 2>&1 | grep -E 'error|time' | tr '\n' ' ')" >> $S
  for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 $args --reps 2 > $L/san.log 2>&1
    echo "  sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/san.log | tr '\n' ' ')" >> $S
  done
done
RUNS="--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32
--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32 --causal top-left
--family f16 --head-dim 128 --seq 16384 --batch 1 --heads 32"
for r in 1 2 3 4; do
  for tpl in main def2; do
    while read -r args; do
      t=$(MXATTN_TEMPLATE_DIR=$B/tpl/$tpl/templates timeout 60 $B/mxattn run $args --reps 50 --check-heads 0 2>&1 | awk '/^time/ {print $2, $5}')
      echo "r$r $tpl ${t:-failed} $args" >> $L/ab.txt
    done <<< "$RUNS"
  done
done
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
awk '{k=$2; for(i=5;i<=NF;i++) k=k" "$i; v[k]=v[k]" "$3} END{for(k in v) print v[k], "|", k}' $L/ab.txt | sort -t'|' -k2
