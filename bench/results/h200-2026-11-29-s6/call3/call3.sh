#!/usr/bin/env bash
# Session 6, device call 3: the softmax-overlap branch (V1 guarded wait, V2 O rescaled under S(t+1),
# V3 tree max) beside main's templates: SASS of each, A/B timings, bench, GPU tests.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L/sass
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
for c in $B/cubins/*.cubin; do n=$(basename $c .cubin); cuobjdump -sass $c > $L/sass/$n.sass 2>&1
  echo "$n: $(grep -c MUFU.EX2 $L/sass/$n.sass) ex2; DEPBAR lines: $(grep -n 'DEPBAR\|MUFU.EX2' $L/sass/$n.sass | awk -F: '/DEPBAR/{print $1}' | tr '\n' ' ')" >> $L/sass_summary.txt; done
# A/B: each variant's templates, interleaved, back to back (mxattn run: 50 timed launches)
for r in 1 2; do for v in 0 1 2 3; do
  TD=$B/tpl$v/templates
  I8P="variant=wgmma overlap=1 block_m=128 warps=12 block_n=128 stages=2"
  while read -r args; do
    t=$(eval MXATTN_TEMPLATE_DIR=$TD timeout 60 $B/mxattn run $args --heads 32 --reps 50 --check-heads 0 2>&1 | grep -E "^time" | awk '{print $2, $5}')
    echo "r$r v$v $args : $t" >> $L/ab.txt
  done <<'ARGS'
--family f16 --head-dim 128 --seq 4096 --batch 4
--family f16 --head-dim 128 --seq 4096 --batch 4 --causal top-left
--family f16 --head-dim 128 --seq 16384 --batch 1
--family int8-fp8 --head-dim 128 --seq 4096 --batch 4
--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --config "$I8P"
--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --causal top-left --config "$I8P"
ARGS
  done; done
timeout 250 python3 bench/attention.py --families "f16,int8-fp8" --dims 128,64 --seqs 4096,16384 \
  --baselines sdpa-cudnn --rounds 2 --out $L/new > $L/new.log 2>&1; echo "bench new rc=$?" >> $S
timeout 240 ctest --test-dir $B -R 'gpu_wgmma|gpu_int8_wgmma' -j2 -V --timeout 230 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S $L/sass_summary.txt $L/ab.txt
echo "== new"; grep -E "^\| " $L/new/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
