#!/usr/bin/env bash
# Session 9, device call 5: replay call 4's one failure (gpu_int8_wgmma test_head_dims, the case
# int8-fp8 D=128 Nq=1 Nk=127 f16, seed 1795988447 = base 1795988417 + 10*3 + 0) under HEAD's
# templates and under call 2's (the stats pass before HEAD's): a failure under both is the
# tolerance's, not the new stats pass's.  Then gpu_int8_wgmma's head dims at five fresh bases.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db
MXATTN_TEST_SEED=1795988417 timeout 100 $B/tests/gpu_int8_wgmma test_head_dims > "$L/replay_head.log" 2>&1
echo "replay HEAD rc=$?" >> "$S"; grep -E "D=128 B=2 Hq=2 Hkv=2 Nq=1 " "$L/replay_head.log" >> "$S"
MXATTN_TEMPLATE_DIR=$B/tpl/call2/templates MXATTN_TEST_SEED=1795988417 timeout 100 $B/tests/gpu_int8_wgmma test_head_dims > "$L/replay_call2.log" 2>&1
echo "replay call2 rc=$?" >> "$S"; grep -E "D=128 B=2 Hq=2 Hkv=2 Nq=1 " "$L/replay_call2.log" >> "$S"
for i in 1 2 3; do
  MXATTN_TEST_SEED=$((1795990000 + 1000 * i)) timeout 60 $B/tests/gpu_int8_wgmma test_head_dims > "$L/fresh_$i.log" 2>&1
  echo "fresh base $((1795990000 + 1000 * i)) rc=$? $(grep -c '^FAIL' "$L/fresh_$i.log") failures" >> "$S"
done
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
