#!/usr/bin/env bash
# `mxattn db export` replaces no file unasked and leaves nothing behind: not
# when it is interrupted by SIGINT, SIGTERM or SIGHUP (its handlers remove the
# temporary), and not after a kill -9 (the next export of the same file
# removes the temporaries of processes that are gone, and only those).
# usage: bash tests/cli_export.sh path/to/mxattn   (exit 0 pass, 1 fail, 77 skip)
set -u
MX=${1:?usage: cli_export.sh path/to/mxattn}
T=$(mktemp -d /tmp/mxattn-cli-export-XXXXXX)
trap 'rm -rf "$T"' EXIT
export MXATTN_CACHE="$T/db.sqlite"
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }

sql() {
  if command -v sqlite3 > /dev/null; then sqlite3 -bail "$1" "$2"
  else python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$1" "$2"; fi
}
if ! command -v sqlite3 > /dev/null && ! python3 -c 'import sqlite3' 2> /dev/null; then
  echo "skip: neither sqlite3 nor python3's sqlite3 module to plant rows"; exit 77
fi

"$MX" db vacuum > /dev/null || { echo "cannot create the database"; exit 1; }

# ---- an existing file is replaced only with --force --------------------------
echo "precious" > "$T/out.mxdb"
"$MX" db export "$T/out.mxdb" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 1 ] || fail "export over an existing file: exit $rc, want 1"
grep -q "exists.*--force" "$T/err" || fail "export over an existing file: $(cat "$T/err")"
[ "$(cat "$T/out.mxdb")" = precious ] && ok "export keeps an existing file" || fail "export replaced the file"
"$MX" db export "$T/out.mxdb" --force > /dev/null 2> "$T/err" && [ "$(head -c 6 "$T/out.mxdb")" = "SQLite" ] \
  && ok "export --force replaces it" || fail "export --force: $(cat "$T/err")"
"$MX" db import --force "$T/out.mxdb" > /dev/null 2>&1; [ $? -eq 2 ] && ok "--force is export's only" \
  || fail "import --force is not a usage error"

# ---- a kill -9 leaves temporaries; the next export removes the dead ones -----
sh -c 'exit 0' & dead=$!; wait $dead
while kill -0 $dead 2> /dev/null; do sh -c 'exit 0' & dead=$!; wait $dead; done
touch "$T/x.mxdb.tmp-$dead" "$T/x.mxdb.tmp-$dead-journal" "$T/x.mxdb.tmp-$$" "$T/y.mxdb.tmp-$dead"
"$MX" db export "$T/x.mxdb" > /dev/null 2> "$T/err" || fail "export beside stale temporaries: $(cat "$T/err")"
[ ! -e "$T/x.mxdb.tmp-$dead" ] && [ ! -e "$T/x.mxdb.tmp-$dead-journal" ] \
  && ok "a dead process's temporaries are removed" || fail "stale temporaries left: $(ls "$T")"
[ -e "$T/x.mxdb.tmp-$$" ] && ok "a live process's temporary is kept" || fail "a live export's temporary was removed"
[ -e "$T/y.mxdb.tmp-$dead" ] && ok "another file's temporaries are not touched" || fail "y.mxdb's temporary removed"
grep -q "removed .*x.mxdb.tmp-$dead" "$T/err" || fail "the removal is not reported: $(cat "$T/err")"

# ---- a signal during the export leaves nothing ---------------------------------
# Enough rows that the copy takes a while; the test waits until the temporary
# exists, then signals.
KEY_COLS="gpu_name, sm_count, compute_capability, driver_version, nvrtc_version, mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout, seq_bucket, q_bucket"
sql "$MXATTN_CACHE" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
  INSERT INTO tune_results($KEY_COLS, config, median_ms, tops, default_ms, tuned_at)
  SELECT 'GPU ' || i, 132, 90, 12040, 12040, '0.1.0', hex(randomblob(32)), 'f16', 64, 'bf16', 'bf16', 0, 1, 'bhnd', 4096, 4096,
         hex(randomblob(150)), 1.0, 400, 1.5, 1700000000 FROM n;" || { echo "cannot plant rows"; exit 1; }
default_signals=
env --default-signal=INT true 2> /dev/null && default_signals="env --default-signal=INT"
for sig in INT TERM HUP; do
  dest="$T/sig-$sig.mxdb"
  # A background job starts with SIGINT ignored (and an ignored signal stays
  # ignored: nohup); env --default-signal gives it the terminal's default.
  $default_signals "$MX" db export "$dest" > /dev/null 2>&1 &
  pid=$!
  for _ in $(seq 1 20000); do [ -e "$dest.tmp-$pid" ] && break; kill -0 $pid 2> /dev/null || break; done
  kill -$sig $pid 2> /dev/null
  wait $pid 2> /dev/null; rc=$?
  if [ $rc -eq 0 ]; then
    echo "note: export finished before SIG$sig arrived: not exercised"
    continue
  fi
  left=$(ls "$T" | grep "sig-$sig.mxdb" || true)
  [ -z "$left" ] && ok "SIG$sig during export (exit $rc) leaves nothing" || fail "SIG$sig left: $left"
done

echo "$fails failed"
[ $fails -eq 0 ]
