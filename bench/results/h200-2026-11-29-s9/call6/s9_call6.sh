#!/usr/bin/env bash
# Session 9, device call 6: the two failing seeds of gpu_int8_wgmma test_head_dims (calls 4-5)
# under the session's starting templates (e10c888): does the D=128 Nq=1 case fail there too?
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db
for base in 1795988417 1795991000; do
  MXATTN_TEMPLATE_DIR=$B/tpl/e10c888/templates MXATTN_TEST_SEED=$base timeout 80 $B/tests/gpu_int8_wgmma test_head_dims > "$L/replay_$base.log" 2>&1
  echo "e10c888 base $base rc=$?" >> "$S"; grep -E "D=128 B=2 Hq=2 Hkv=2 Nq=1 " "$L/replay_$base.log" | cut -c1-330 >> "$S"
done
tar -czf "$OUT/logs.tgz" -C "$OUT" logs
cat "$S"
