#!/usr/bin/env bash
# Session 21, call 5: the one #7 shape call 3's tune did not reach (int8-fp8 D=64 causal N=16384)
# into call 3's database, so it holds all sixteen; then the spread of int8-fp8 D=128 against
# cuDNN in two more runs (9 rounds, 1.5 s a row), the D=128 N=16384 target (1.5x) read 1.448-1.495
# across s20-s21.  ~5 min; timeout_s 400; carry build-gpu (with build-gpu/tuned.db).
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
cp $B/tuned.db /tmp/mx.db
timeout 120 $B/mxattn tune --family int8-fp8 --head-dims 64 --seqs 16384 --causal top-left --batch 4 --heads 32 \
  --max-candidates 4 > "$L/tune.log" 2>&1
stamp "tune rc=$?: $(tail -2 "$L/tune.log" | tr '\n' ';')"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
cp /tmp/mx.db "$OUT/tuned.db"
for run in 1 2; do
  BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
    BENCH_TIMEOUT=$((380 - SECONDS)) MXATTN_BUILD=$B OUT=$L/run$run bash scripts/device.sh --bench > "$L/run$run.log" 2>&1
  stamp "run $run: $(grep '^## bench' "$L/run$run.log")"
  grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/run$run/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 >> "$S"
done
finish_call
exit 0
