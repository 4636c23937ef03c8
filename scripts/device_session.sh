#!/usr/bin/env bash
# One device call for a session's verification: scripts/device.sh's GPU tests
# ($TESTS), compute-sanitizer ($SANITIZE_CONFIG, $SANITIZE_ARGS), the Python
# GPU tests and the full benchmark (with $EXTRA_ROWS when the tests passed).
# The device tool returns at most 8 files, so every log is packed into
# $OUT/logs.tgz beside $OUT/bench.  Summary last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/mxattn-out}
mkdir -p "$OUT"
OUT="$OUT/logs" bash scripts/device.sh --tests --sanitize --pytest --bench > "$OUT/device.log" 2>&1
mv "$OUT/logs/bench" "$OUT/bench" 2>/dev/null
mv "$OUT/device.log" "$OUT/logs/"
sed -n '/==== summary/,$p' "$OUT/logs/device.log"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
