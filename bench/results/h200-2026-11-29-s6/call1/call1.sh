#!/usr/bin/env bash
# Session 6, device call 1: branch s6 = main + persistent-dynamic + tuner-abab.
# GPU tests of both, sanitizer on the dynamic persistent kernel, benches, two tunes, ncu profiles.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader > $L/env.txt
timeout 200 ctest --test-dir $B -R 'gpu_wgmma|gpu_tune' -j2 -V --timeout 190 > $L/ctest.log 2>&1; echo "ctest rc=$?" >> $S
grep -E "tests passed|tests failed|Test +#" $L/ctest.log >> $S
grep -E "^[0-9]+: .*(FAIL|ERROR)" $L/ctest.log | head -20 >> $S
PSC="variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12 persistent=1 block_n=128 stages=2"
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run --family f16 --head-dim 128 --batch 12 --heads 4 \
    --seq-q 300 --seq-k 200 --causal bottom-right --config "$PSC" --reps 2 > $L/sanitize_$tool.log 2>&1
  echo "sanitize $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $L/sanitize_$tool.log | tr '\n' ' ')" >> $S
done
PP='variant=wgmma q_regs=0 overlap=1 block_m=128 warps=12'
timeout 200 python3 bench/attention.py --families "f16,f16[$PP persistent=1 block_n=128 stages=3],f16[$PP block_n=128 stages=3]" \
  --dims 128 --baselines sdpa-cudnn --out $L/dyn > $L/dyn.log 2>&1; echo "bench dyn rc=$?" >> $S
for i in 1 2; do
  rm -f /tmp/t$i.db
  timeout 90 $B/mxattn tune --family f16 --head-dims 128 --seqs 4096 --causal both --batch 4 --heads 32 --max-candidates 6 --fresh --db /tmp/t$i.db > $L/tune$i.txt 2>&1
  echo "tune$i rc=$?" >> $S; grep -iE "pick|best|winner|speed|x " $L/tune$i.txt | head -8 >> $S
done
NCU="ncu --clock-control none --set full --import-source no"
timeout 120 $NCU --launch-skip 2 --launch-count 1 -o $L/f16_n4096 $B/mxattn run --family f16 --head-dim 128 --batch 4 --heads 32 --seq 4096 --reps 3 --check-heads 0 > $L/ncu_f16.log 2>&1
echo "ncu f16 rc=$?" >> $S
timeout 120 $NCU --launch-skip 3 --launch-count 3 -o $L/i8_n4096 $B/mxattn run --family int8-fp8 --head-dim 128 --batch 4 --heads 32 --seq 4096 --reps 3 --check-heads 0 > $L/ncu_i8.log 2>&1
echo "ncu i8 rc=$?" >> $S
for r in f16_n4096 i8_n4096; do
  ncu -i $L/$r.ncu-rep --page details > $L/${r}_details.txt 2>&1
  ncu -i $L/$r.ncu-rep --page source --csv --print-source sass > $L/${r}_sass.csv 2>&1
done
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S
echo "== dyn"; grep -E "^\| " $L/dyn/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
grep -E "Duration|Memory Throughput|Compute \(SM\) Throughput|Registers Per|  [a-z_]+.*\(" $L/*_details.txt | head -40
