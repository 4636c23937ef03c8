#!/usr/bin/env bash
# Session 23, call 5 (a fifth machine start): issue #7's bench twice in one start, untuned
# defaults, 7 rounds, 1200 ms a row, clocks: first with --settle-ms 500 (each timing after half
# a second of the same implementation's own load: every row in its sustained state, as
# bench/micro/sustained_power.py found them in calls 3-4), then as before (no settle).  ~5 min;
# carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
for run in settled plain; do
  settle=500; [[ $run == plain ]] && settle=0
  BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --settle-ms $settle --clocks" \
    BENCH_TIMEOUT=$((560 - SECONDS)) MXATTN_BUILD=$B OUT=$L/$run bash scripts/device.sh --bench > "$L/$run.log" 2>&1
  stamp "bench #7 $run: $(grep '^## bench' "$L/$run.log")"
  grep -E "^- timer" "$L/$run/bench/results.md" >> "$S"
  grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/$run/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
  cp "$L/$run/bench/results.md" "$OUT/${run}_results.md" 2>/dev/null
done
finish_call
exit 0
