#!/usr/bin/env bash
# Session 6, device call 4: the rotated turns (branch turn-rotation) vs main and vs main + tree max:
# SASS, A/B timings (mxattn run, interleaved), gpu_wgmma.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L/sass
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
for c in $B/cubins/*.cubin; do n=$(basename $c .cubin); cuobjdump -sass $c > $L/sass/$n.sass 2>&1
  echo "$n: DEPBAR lines: $(grep -n 'DEPBAR' $L/sass/$n.sass | cut -d: -f1 | tr '\n' ' ') first MUFU lines: $(grep -n 'MUFU.EX2' $L/sass/$n.sass | cut -d: -f1 | awk 'NR%64==1' | tr '\n' ' ')" >> $S; done
for r in 1 2 3; do for v in 0 1 2; do
  while read -r args; do
    t=$(MXATTN_TEMPLATE_DIR=$B/tpl$v/templates timeout 60 $B/mxattn run $args --heads 32 --reps 50 --check-heads 0 2>&1 | grep -E "^time" | awk '{print $2, $5}')
    echo "r$r v$v $args : $t" >> $L/ab.txt
  done <<'ARGS'
--family f16 --head-dim 128 --seq 4096 --batch 4
--family f16 --head-dim 128 --seq 4096 --batch 4 --causal top-left
--family f16 --head-dim 128 --seq 16384 --batch 1
ARGS
done; done
timeout 150 ctest --test-dir $B -R 'gpu_wgmma' -V --timeout 140 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S $L/ab.txt
