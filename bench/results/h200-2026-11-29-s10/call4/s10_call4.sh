#!/usr/bin/env bash
# Session 10's last device call (~6 min; run with timeout_s 480, everything inside stops by 420 s):
#   1. memcheck of the changed quant pass (V's clamped loads, padding codes a word at a time) at
#      odd sizes: padding rows, padding channels;
#   2. `mxattn tune` for int8-fp8 at the issue's shapes (16 candidates each), then the database;
#   3. the bench against that database (the tuner's picks), 3 rounds, clocks logged, with
#      int8-fp8's ping-pong (overlap=1) as an extra row to see where it stands today.
# Prepare: build-gpu as in scripts/s10_call2.sh (no tpl/ needed).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx10.db PYTHONUNBUFFERED=1
stamp() { echo "[$(date +%T) +$SECONDS s] $*" >> "$S"; }
work() {
  stamp start
  local args
  while read -r args; do
    timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $B/mxattn run $args --reps 2 > "$L/memcheck.log.tmp" 2>&1
    stamp "memcheck rc=$? $args | $(grep -E 'ERROR SUMMARY|error +rel' "$L/memcheck.log.tmp" | tr -s ' ' | tr '\n' ' ')"
    cat "$L/memcheck.log.tmp" >> "$L/memcheck.log"
  done <<'RUNS'
--family int8-fp8 --head-dim 72 --seq 300 --batch 1 --heads 2
--family int8-fp8 --head-dim 128 --seq 257 --batch 2 --heads 2
--family int8-fp8 --head-dim 64 --seq-q 33 --seq-k 190 --batch 1 --heads 4 --kv-heads 2
--family int8-f16 --head-dim 40 --seq 129 --batch 1 --heads 2
RUNS
  rm -f "$L/memcheck.log.tmp"
  timeout 170 $B/mxattn tune --family int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both --batch 4 --heads 32 \
    --max-candidates 16 > "$L/tune.log" 2>&1
  stamp "tune rc=$?"
  $B/mxattn query --family int8-fp8 > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
  BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 3 --clocks" \
    EXTRA_ROWS="int8-fp8[variant=wgmma overlap=1 block_m=128 warps=12 block_n=128 stages=2]" \
    BENCH_TIMEOUT=$((420 - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
  stamp "$(grep '^## bench' "$L/device_bench.log")"
}
work
cd "$L" && tar -czf "$OUT/logs.tgz" . && cd - > /dev/null
cat "$S"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8
exit 0
