#!/usr/bin/env bash
# Session 8, call 3: int8-fp8 overlap=0 with O's rescale fused into the P V fold (fold_pv, one FFMA
# a value) against HEAD's templates (rescale_o under the MMA, then add_pv); f16 D=64's 192-row
# default with 160/176-key tiles against 128.  Correctness of the fold against the CPU reference.
set -uo pipefail
B=build-gpu; L=$OUT/logs; mkdir -p $L; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
OLD=$B/tpl/head/templates NEW=$B/tpl/new/templates
run() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 90 $B/mxattn run "$@" 2>&1; }
for args in "--head-dim 128 --seq 1000 --batch 2 --heads 4" "--head-dim 64 --seq-q 700 --seq-k 900 --batch 1 --heads 4 --causal top-left" \
            "--head-dim 256 --seq-q 333 --seq-k 1200 --batch 1 --heads 2 --causal bottom-right"; do
  for side in OLD NEW; do
    echo "check int8-fp8 $side $args: $(run ${!side} --family int8-fp8 $args --check-heads 4 --reps 2 | grep -E '^error|error:' | tr '\n' ' ')" >> $S
  done
done
MXATTN_TEMPLATE_DIR=$NEW timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 $B/mxattn run --family int8-fp8 --head-dim 128 \
  --seq-q 300 --seq-k 700 --batch 1 --heads 2 --reps 1 --check-heads 0 > $L/san.log 2>&1
echo "racecheck new rc=$? $(grep -E 'RACECHECK SUMMARY' $L/san.log)" >> $S
while IFS='|' read -r what args; do
  [ -z "$what" ] && continue
  for r in 1 2 3; do
    for side in OLD NEW; do
      ms=$(run ${!side} $args --reps 100 --check-heads 0 | awk '/^time/ {print $2, $5}')
      echo "$what r$r $side ${ms:-failed}" >> $L/ab.txt
    done
  done
done <<ARGS
int8 D128 N16384 B1|--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32
int8 D128 N4096 B4|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
int8 D64 N16384 B4|--family int8-fp8 --head-dim 64 --seq 16384 --batch 4 --heads 32
int8 D128 N16384 B1 causal|--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32 --causal top-left
ARGS
for r in 1 2 3; do
  for n in 4096 16384; do
    for bn in 128 160 176; do
      ms=$(run $NEW --family f16 --head-dim 64 --seq $n --batch 4 --heads 32 --reps 100 --check-heads 0 \
           --config "variant=wgmma q_regs=0 block_m=192 warps=16 block_n=$bn stages=2" | awk '/^time/ {print $2, $5}')
      echo "f16 D64 N$n bn$bn r$r ${ms:-failed}" >> $L/ab.txt
    done
  done
done
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S; sort -s -k1,4 $L/ab.txt
