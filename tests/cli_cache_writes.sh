#!/bin/bash
# Failed cache writes are reported: `tune --compile-only` against a full disk,
# a read-only database and a database another process holds locked exits
# non-zero naming how many kernels were compiled, stored and not stored, and
# why.  Needs NVRTC (compile-only builds real kernels, no GPU): skips without.
# Usage: bash tests/cli_cache_writes.sh /path/to/mxattn.  Exit 0 pass, 1 fail, 77 skip.
set -u
MX=${1:?usage: cli_cache_writes.sh /path/to/mxattn}
T=$(mktemp -d /tmp/mxattn-cli-writes-XXXXXX)
trap 'rm -rf "$T"' EXIT
failures=0
ran=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# compile SEQ DB N: compile-only of N candidates of one f16 shape into DB.
compile() {
    "$MX" tune --compile-only --family f16 --head-dims "$1" --dtype f16 --causal none --seqs 1024 \
        --max-candidates "$3" --threads 1 --db "$2" 2>&1 | grep -v ' compiling '
    return "${PIPESTATUS[0]}"
}

# expect_lost NAME OUTPUT RC COMPILED REASON: exit 1, and the one line that says so.
expect_lost() {
    local name=$1 out=$2 rc=$3 compiled=$4 reason=$5
    ran=$((ran + 1))
    [ "$rc" -eq 1 ] || fail "$name: exit $rc, wanted 1: $out"
    grep -qE "^mxattn tune: error: compiled $compiled, stored [0-9]+: [0-9]+ kernels? not stored: .*$reason" <<<"$out" ||
        fail "$name: no 'compiled $compiled, stored M: K kernels not stored: ...$reason' line: $out"
    local stored
    stored=$(sed -nE 's/.*compiled [0-9]+, stored ([0-9]+):.*/\1/p' <<<"$out")
    [ -n "$stored" ] && [ "$stored" -lt "$compiled" ] || fail "$name: stored '$stored' of $compiled"
}

if ! out=$(compile 64 "$T/probe.db" 1) || ! grep -q "kernels compiled  1" <<<"$out"; then
    echo "skip: compile-only does not work here (no NVRTC?): $out"; exit 77
fi

# ---- a full disk: a 160 KB tmpfs holds a few kernels of eight ----------------
mkdir "$T/full"
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
    out=$(unshare -m bash -c 'mount -t tmpfs -o size=160k tmpfs "$1" || exit 99
        "$2" tune --compile-only --family f16 --head-dims 64 --dtype f16 --causal none --seqs 1024 \
            --max-candidates 8 --threads 1 --db "$1/mxattn.db" 2>&1 | grep -v " compiling "
        exit "${PIPESTATUS[0]}"' _ "$T/full" "$MX")
    rc=$?
    if [ $rc -eq 99 ]; then echo "skip the full-disk case: cannot mount a tmpfs here"
    else expect_lost "full disk" "$out" $rc 8 "full"; fi
else
    echo "skip the full-disk case: needs root and unshare -m to mount a small tmpfs"
fi

# ---- a read-only database ------------------------------------------------------
"$MX" db vacuum --db "$T/ro.db" >/dev/null || fail "cannot create $T/ro.db"
chmod 0444 "$T/ro.db"
if [ "$(id -u)" -ne 0 ]; then
    out=$(compile 64 "$T/ro.db" 2); rc=$?
    expect_lost "read-only" "$out" $rc 2 "(read-only|readonly)"
elif command -v setpriv >/dev/null; then
    # root writes any file: run as nobody, in a directory nobody may write
    # (SQLite's -wal and -shm go beside the database).
    chmod 0777 "$T"
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c '
        "$1" tune --compile-only --family f16 --head-dims 64 --dtype f16 --causal none --seqs 1024 \
            --max-candidates 2 --threads 1 --db "$2" 2>&1 | grep -v " compiling "
        exit "${PIPESTATUS[0]}"' _ "$MX" "$T/ro.db")
    rc=$?
    expect_lost "read-only" "$out" $rc 2 "(read-only|readonly)"
else
    echo "skip the read-only case: root writes read-only files, and there is no setpriv to drop it"
fi

# ---- another process holds the write lock past the bounded wait ---------------
if command -v python3 >/dev/null && python3 -c 'import sqlite3' 2>/dev/null; then
    "$MX" db vacuum --db "$T/busy.db" >/dev/null || fail "cannot create $T/busy.db"
    python3 -c 'import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))' "$T/busy.db" 150 >"$T/holder.out" &
    holder=$!
    for _ in $(seq 100); do grep -q locked "$T/holder.out" && break; sleep 0.1; done
    out=$(MXATTN_CACHE_BUSY_MS=2000 compile 64 "$T/busy.db" 1); rc=$?
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    expect_lost "held lock" "$out" $rc 1 "(write lock|locked)"
else
    echo "skip the held-lock case: no python3 sqlite3 module to hold the lock"
fi

[ $ran -gt 0 ] || { echo "skip: no case could run here"; exit 77; }
[ $failures -eq 0 ] && echo "ok: $ran cases"
[ $failures -eq 0 ]
