#!/usr/bin/env bash
# Session 21, call 3: the GPU suite with this session's tuner (settle, per-family check bounds,
# reasons printed), then `mxattn tune` of issue #7's shapes (f16 and int8-fp8, D=128 and 64,
# N=4096 and 16384, causal none and top-left; B=4 H=32; 4 candidates each: the default and its
# rivals first; each settled 0.5 s) into one database, which comes back for call 4's bench.
# Prediction: every winner is the default but where a rival measured faster in the bench (none
# at these shapes in s20's tables); no "wrong result" for int8-fp8's overlap=1 now.
# ~7 min; timeout_s 560; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 260 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "^# d=|FAIL" "$L/ctest.log" | head -12 >> "$S"
rm -f /tmp/mx.db
timeout $((540 - SECONDS)) $B/mxattn tune --family f16,int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both \
  --batch 4 --heads 32 --max-candidates 4 > "$L/tune.log" 2>&1
stamp "tune rc=$?: $(grep -cE 'wrong result|launch failed|compile failed' "$L/tune.log") failed candidates; $(tail -3 "$L/tune.log" | tr '\n' ';')"
grep -E "wrong result|launch failed|compile failed" "$L/tune.log" | head -5 >> "$S"
$B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
python3 -c "import sqlite3,sys; [print('  meas', *r) for r in sqlite3.connect(sys.argv[1]).execute('select family, head_dim, causal, seq_bucket, status, round(median_ms,4), config from measurements order by family, head_dim, causal, seq_bucket, median_ms')]" /tmp/mx.db >> "$L/measurements.txt" 2>&1
cp /tmp/mx.db "$OUT/tuned.db"
finish_call
exit 0
