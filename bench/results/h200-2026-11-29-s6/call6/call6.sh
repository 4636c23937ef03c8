#!/usr/bin/env bash
# Session 6, device call 6: the rotated turns with O's rescale at the turn's head (turn-rotation
# branch) vs main's turns, on the persistent f16 kernel: SASS and interleaved A/B timings.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L/sass
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db
S=$L/summary.txt
for c in $B/cubins/*.cubin; do n=$(basename $c .cubin); cuobjdump -sass $c > $L/sass/$n.sass 2>&1
  echo "$n: DEPBAR lines: $(grep -n 'DEPBAR' $L/sass/$n.sass | cut -d: -f1 | tr '\n' ' ') MUFU lines: $(grep -n 'MUFU.EX2' $L/sass/$n.sass | cut -d: -f1 | awk 'NR%66==1' | tr '\n' ' ')" >> $S; done
P="variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 persistent=1 block_n=128 stages=3"
for r in 1 2 3; do for v in 0 1; do
  while read -r args; do
    t=$(eval MXATTN_TEMPLATE_DIR=$B/tpl$v/templates timeout 60 $B/mxattn run $args --heads 32 --reps 50 --check-heads 0 --config "'$P'" 2>&1 | grep -E "^time" | awk '{print $2, $5}')
    echo "r$r v$v $args : $t" >> $L/ab.txt
  done <<'ARGS'
--family f16 --head-dim 128 --seq 4096 --batch 4
--family f16 --head-dim 128 --seq 4096 --batch 4 --causal top-left
--family f16 --head-dim 128 --seq 16384 --batch 1
ARGS
done; done
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S $L/ab.txt
