# Sourced by a session's device-call scripts (scripts/s11_first_call.sh): what
# sessions 8-10 wrote at the top and bottom of every call script.  Sets B (the
# carried build folder), L (the log folder under the device tool's $OUT), S
# (the summary), the library's environment, stamp (a timed summary line), and
# finish_call (packs the logs into one file, since $OUT returns at most 8,
# prints the summary).
set -uo pipefail
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"; S=$L/summary.txt
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_LIB=$B/libmxattn.so MXATTN_CACHE=/tmp/mx.db PYTHONUNBUFFERED=1
stamp() { echo "[$(date +%T) +$SECONDS s] $*" >> "$S"; }
finish_call() {
  (cd "$L" && tar -czf "$OUT/logs.tgz" .)
  cat "$S"
}
