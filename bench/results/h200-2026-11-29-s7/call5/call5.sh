#!/usr/bin/env bash
# Session 7, device call 5 (main at the merge of deferred-output): f16 D=64, the cell under its target
# (N=16384 0.935-0.957x): mxattn tune at D=64, ncu of ours and cuDNN's kernel at D=64 N=16384, then the
# D=64 bench with the tuned database.
set -uo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
L=$OUT/logs; mkdir -p $L
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader > $L/env.txt
NCU="ncu --clock-control none --set full --import-source no"
timeout 60 $NCU -k regex:mxattn_f16 -c 1 -f -o $L/f16d64 $B/mxattn run --family f16 --head-dim 64 --seq 16384 --batch 4 --heads 32 --reps 1 --check-heads 0 > $L/ncu_f16.log 2>&1
echo "ncu f16 d64 rc=$?" >> $S
timeout 90 $NCU -k regex:'flash|fmha|sdpa|attention' -c 1 -f -o $L/cudnn64 python3 $B/cudnn_once.py > $L/ncu_cudnn.log 2>&1
echo "ncu cudnn d64 rc=$?" >> $S
for r in f16d64 cudnn64; do
  ncu -i $L/$r.ncu-rep --page details > $L/${r}_details.txt 2>&1
  ncu -i $L/$r.ncu-rep --page raw --csv > $L/${r}_raw.csv 2>&1
done
ncu -i $L/f16d64.ncu-rep --page source --csv --print-source sass > $L/f16d64_source.csv 2>&1
timeout 240 $B/mxattn tune --family f16 --head-dims 64 --seqs 4096,16384 --causal both --heads 32 --max-candidates 10 > $L/tune.txt 2>&1
echo "tune rc=$?" >> $S
$B/mxattn query > $L/query.txt 2>&1
timeout 150 python3 bench/attention.py --families "f16" --dims 64 --seqs 4096,16384 --causal both \
  --baselines sdpa-cudnn --rounds 3 --out $L/tuned > $L/tuned.log 2>&1; echo "bench tuned rc=$?" >> $S
rm -f $L/*.ncu-rep
tar -czf $OUT/logs.tgz -C $OUT logs
cat $S $L/query.txt
tail -15 $L/tune.txt
grep -E "Duration|SM Frequency|Registers Per|Compute \(SM\) Throughput|Issue Slots Busy|Grid Size|Block Size|Achieved Occupancy|Kernel Name|^  [a-z_0-9]+ \(" $L/f16d64_details.txt $L/cudnn64_details.txt | head -30
echo "== tuned"; grep -E "^\| " $L/tuned/results.md 2>/dev/null | awk -F'|' '{print $2,$3,$4,$5,$7,$8}'
