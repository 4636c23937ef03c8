#!/usr/bin/env bash
# A prepared first device call for the session after 2026-11-29-s7 (docs/status-2026-11-29-s7.md):
# the three branches that wait for a GPU, checked and timed against main through their templates
# alone (MXATTN_TEMPLATE_DIR; their new C tests need their own builds), and the power check.
# Prepare here, on main's build:
#   scripts/ab_templates.sh build-gpu main split-tail d64-three-consumers int8-rowsum-mma
# then run on the GPU machine with OUT set (the device tool sets it):
#   bash scripts/s8_first_call.sh
# Budget: ~6 minutes.  Logs in $OUT/logs (tar'd to $OUT/logs.tgz), a summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"
export LD_LIBRARY_PATH=$PWD/$B/testlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} MXATTN_LIB=$B/libmxattn.so
export MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
S=$L/summary.txt
tpl() { echo "$B/tpl/$1/templates"; }
for b in main split-tail d64-three-consumers int8-rowsum-mma; do
  [ -d "$(tpl $b)" ] || { echo "missing $(tpl $b): run scripts/ab_templates.sh first" | tee -a "$S"; exit 2; }
done
run() { local dir=$1; shift; MXATTN_TEMPLATE_DIR=$dir timeout 90 $B/mxattn run "$@" 2>&1; }

# 1. Correctness against the CPU reference (mxattn run's check) and two sanitizers, per branch.
D64C="variant=wgmma q_regs=0 block_m=192 warps=16 block_n=128 stages=2"
while IFS='|' read -r b args; do
  [ -z "$b" ] && continue
  echo "check $b $args: $(eval run "$(tpl $b)" $args --reps 2 | grep -E '^error|error:' | tr '\n' ' ')" >> "$S"
done <<ARGS
split-tail|--family f16 --head-dim 128 --seq-q 300 --seq-k 3000 --batch 1 --heads 2 --check-heads 2
split-tail|--family f16 --head-dim 64 --seq-q 130 --seq-k 1100 --batch 1 --heads 4 --kv-heads 2 --check-heads 4
d64-three-consumers|--family f16 --head-dim 64 --seq-q 333 --seq-k 1000 --batch 2 --heads 4 --kv-heads 2 --check-heads 4 --config '$D64C'
d64-three-consumers|--family f16 --head-dim 64 --seq-q 200 --seq-k 777 --batch 1 --heads 2 --causal bottom-right --check-heads 2 --config '$D64C'
int8-rowsum-mma|--family int8-fp8 --head-dim 128 --seq 1000 --batch 2 --heads 4 --check-heads 4
int8-rowsum-mma|--family int8-fp8 --head-dim 64 --seq-q 700 --seq-k 900 --batch 1 --heads 4 --causal top-left --check-heads 4
ARGS
while IFS='|' read -r b args; do
  [ -z "$b" ] && continue
  for tool in memcheck racecheck; do
    eval MXATTN_TEMPLATE_DIR="$(tpl $b)" timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $B/mxattn run \
      $args --reps 1 --check-heads 0 > "$L/san.log" 2>&1
    echo "sanitize $b $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/san.log" | tr '\n' ' ')" >> "$S"
  done
done <<ARGS
split-tail|--family f16 --head-dim 128 --seq-q 300 --seq-k 1500 --batch 1 --heads 2
d64-three-consumers|--family f16 --head-dim 64 --seq-q 333 --seq-k 500 --batch 1 --heads 2 --config '$D64C'
int8-rowsum-mma|--family int8-fp8 --head-dim 128 --seq-q 300 --seq-k 1500 --batch 1 --heads 2
ARGS

# 2. Speed, interleaved rounds; each line: what it is | templates A | arguments A | templates B |
#    arguments B (d64-three-consumers' tile is a configuration of its own templates).
while IFS='|' read -r what ta aa tb ab; do
  [ -z "$what" ] && continue
  for r in 1 2 3; do
    for side in A B; do
      if [ $side = A ]; then t=$ta; args=$aa; else t=$tb; args=$ab; fi
      ms=$(eval run "$(tpl $t)" $args --reps 50 --check-heads 0 | awk '/^time/ {print $2, $5}')
      echo "$what r$r $side($t) ${ms:-failed} |$args" >> "$L/ab.txt"
    done
  done
done <<ARGS
small-split|main|--family f16 --head-dim 128 --seq 1024 --batch 1 --heads 8|split-tail|--family f16 --head-dim 128 --seq 1024 --batch 1 --heads 8
large-nosplit|main|--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32|split-tail|--family f16 --head-dim 128 --seq 4096 --batch 4 --heads 32
d64-192|d64-three-consumers|--family f16 --head-dim 64 --seq 16384 --batch 4 --heads 32|d64-three-consumers|--family f16 --head-dim 64 --seq 16384 --batch 4 --heads 32 --config '$D64C'
int8-rowsum-16k|main|--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32|int8-rowsum-mma|--family int8-fp8 --head-dim 128 --seq 16384 --batch 1 --heads 32
int8-rowsum-4k|main|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32|int8-rowsum-mma|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
ARGS

# 3. The power check (main): clocks beside the ratios.
timeout 150 python3 bench/attention.py --families f16 --dims 64,128 --seqs 4096,16384 --causal no \
  --baselines sdpa-cudnn --rounds 3 --clocks --out "$L/clocks" > "$L/clocks.log" 2>&1
echo "bench --clocks rc=$?" >> "$S"

tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
sort -k1,1 -s "$L/ab.txt" | cut -d'|' -f1
grep -E "^\| " "$L/clocks/results.md" 2>/dev/null | awk -F'|' '{print $2,$3,$4,$7,$8,$11,$12}'
