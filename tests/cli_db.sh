#!/bin/bash
# End-to-end test of `mxattn query` and `mxattn db`: bash tests/cli_db.sh /path/to/mxattn
# Rows are planted with the sqlite3 program (or Python's sqlite3 module), since
# tuning needs a GPU.  Exit 0 pass, 1 fail, 77 skip.
set -u
MX=${1:?usage: cli_db.sh /path/to/mxattn}
T=$(mktemp -d /tmp/mxattn-cli-db-XXXXXX)
trap 'rm -rf "$T"' EXIT
export MXATTN_CACHE="$T/cache/mxattn.db"
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Runs SQL against a database file with whatever SQLite client there is.
sql() {
    if command -v sqlite3 >/dev/null; then
        sqlite3 -bail "$1" "$2"
    else
        python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit()' "$1" "$2"
    fi
}
if ! command -v sqlite3 >/dev/null && ! python3 -c 'import sqlite3' 2>/dev/null; then
    echo "skip: neither sqlite3 nor python3's sqlite3 module to plant rows"; exit 77
fi

# expect_ok NAME PATTERN CMD...: exit 0 and stdout matches PATTERN (grep -E).
expect_ok() {
    local name=$1 pattern=$2; shift 2
    local out rc
    out=$("$@" 2>"$T/stderr"); rc=$?
    if [ $rc -ne 0 ]; then fail "$name: exit $rc: $(cat "$T/stderr")"; return; fi
    if ! grep -qE -- "$pattern" <<<"$out"; then fail "$name: output lacks /$pattern/: $out"; fi
}

# expect_error NAME CODES CMD...: exits with one of CODES ("1", "2" or "1 2"),
# never a signal, and says why on stderr in a line naming the command.
expect_error() {
    local name=$1 codes=$2; shift 2
    "$@" >"$T/stdout" 2>"$T/stderr"; local rc=$?
    if [ $rc -ge 128 ]; then fail "$name: killed by a signal (exit $rc)"; return; fi
    case " $codes " in *" $rc "*) ;; *) fail "$name: exit $rc, wanted $codes: $(cat "$T/stderr")"; return;; esac
    if ! grep -q "^mxattn [a-z]*: error: " "$T/stderr"; then fail "$name: no error line: $(cat "$T/stderr")"; fi
    if [ "$(grep -c 'error:' "$T/stderr")" -ne 1 ]; then fail "$name: more than one error line"; fi
}

KEY_COLS="gpu_name, sm_count, compute_capability, driver_version, nvrtc_version, mxattn_version, template_hash, family, head_dim, dtype, out_dtype, causal, gqa, layout, seq_bucket, q_bucket"
row() { # gpu family head_dim dtype causal bucket config ms (a prefill row: q_bucket = bucket)
    echo "INSERT INTO tune_results($KEY_COLS, config, median_ms, tops, default_ms, tuned_at)
          VALUES('$1', 132, 90, 12040, 12040, '0.1.0', 'abc', '$2', $3, '$4', '$4', $5, 1, 'bhnd', $6, $6, '$7', $8, 400, $8 * 1.5, 1700000000);"
}

# ---- reading a missing database is an error and creates nothing -----------
expect_error "query on a missing db" "1" "$MX" query
grep -q "no cache database at '$MXATTN_CACHE'" "$T/stderr" || fail "query on a missing db: $(cat "$T/stderr")"
expect_error "query --db in a missing directory" "1" "$MX" query --db "$T/nodir/x.db"
expect_error "db check on a missing db" "1" "$MX" db check --db "$T/nodir/x.db"
expect_error "db export of a missing db" "1" "$MX" db export "$T/out.mxdb" --db "$T/nodir/x.db"
[ ! -e "$T/cache" ] && [ ! -e "$T/nodir" ] && [ ! -e "$T/out.mxdb" ] || fail "a read of a missing db created files"

# ---- an empty database is created by a command that writes ---------------
"$MX" db vacuum >/dev/null 2>"$T/stderr" || fail "db vacuum on a new db: $(cat "$T/stderr")"
expect_ok "query on empty db" "no tuned configurations" "$MX" query
[ -f "$MXATTN_CACHE" ] || fail "vacuum did not create $MXATTN_CACHE"
expect_ok "query --json on empty db" '^\[\]$' "$MX" query --json

# ---- plant rows, then filter ----------------------------------------------
sql "$MXATTN_CACHE" "$(row 'NVIDIA H200' f16 128 f16 0 4096 'block_m=64 block_n=64' 1.0)
$(row 'NVIDIA H200' int8-f16 128 bf16 1 4096 'block_m=64 block_n=64 warps=4' 0.6)
$(row 'NVIDIA H100 80GB HBM3' f16 64 f16 1 1024 'block_m=64 block_n=32' 0.4)" || { echo "cannot plant rows"; exit 1; }

expect_ok "table lists rows" "block_m=64 block_n=64 warps=4" "$MX" query
expect_ok "table has a header" "^gpu +family" "$MX" query
n=$("$MX" query --json | grep -c '"gpu":')
[ "$n" = 3 ] || fail "--json gave $n objects, wanted 3"
n=$("$MX" query --json --gpu h200 | grep -c '"gpu":')
[ "$n" = 2 ] || fail "--gpu h200 gave $n, wanted 2"
n=$("$MX" query --json --family f16 --head-dim 64 | grep -c '"gpu":')
[ "$n" = 1 ] || fail "--family f16 --head-dim 64 gave $n, wanted 1"
n=$("$MX" query --json --dtype bf16 --causal 1 | grep -c '"gpu":')
[ "$n" = 1 ] || fail "--dtype bf16 --causal 1 gave $n, wanted 1"
expect_ok "json has speedup" '"speedup": 1.5' "$MX" query --json --gpu H100
if command -v python3 >/dev/null; then
    "$MX" query --json | python3 -c 'import json,sys; rows=json.load(sys.stdin); assert len(rows)==3' \
        || fail "--json is not valid JSON"
fi

# ---- export, import, merge, vacuum, check ----------------------------------
expect_ok "export" "exported" "$MX" db export "$T/share.mxdb"
[ -f "$T/share.mxdb" ] || fail "export wrote no file"
expect_ok "import into another db" "3 taken" "$MX" db import "$T/share.mxdb" --db "$T/other.db"
n=$("$MX" query --json --db "$T/other.db" | grep -c '"gpu":')
[ "$n" = 3 ] || fail "imported db has $n rows, wanted 3"
sql "$T/other.db" "UPDATE tune_results SET median_ms = 0.1, config = 'block_m=128 block_n=64' WHERE family = 'f16' AND head_dim = 128;
                   UPDATE tune_results SET median_ms = 9.0, config = 'block_m=128 block_n=64' WHERE head_dim = 64;"
expect_ok "merge keeps the faster" "1 taken, 2 kept" "$MX" db merge "$T/other.db"
expect_ok "merged row" "block_m=128 block_n=64" "$MX" query --family f16 --head-dim 128
expect_ok "kept row" "block_m=64 block_n=32" "$MX" query --head-dim 64
# A row whose config its problem cannot take (a shape key smuggled in, an
# illegal tile) is refused by name, and the legal one beside it is taken.
"$MX" db vacuum --db "$T/bad.db" > /dev/null || fail "cannot create bad.db"
sql "$T/bad.db" "$(row 'NVIDIA H200' f16 64 f16 1 1024 'head_dim=256 causal=0 lse=1' 0.3)
$(row 'NVIDIA H200' int8-f16 128 bf16 0 4096 'block_m=128 block_n=64' 0.5)
$(row 'NVIDIA H200' f16 128 bf16 0 8192 'block_m=128 block_n=64' 2.0)"
expect_ok "import refuses what its problem cannot take" "3 tuning results read, 1 taken, 0 kept \(ours faster\), 2 refused" \
    "$MX" db import "$T/bad.db"
grep -q "refused 2 rows: .*head_dim" "$T/stderr" || fail "the refusal does not name the smuggled key: $(cat "$T/stderr")"
expect_ok "vacuum" "vacuumed" "$MX" db vacuum
expect_ok "check" "^ok$" "$MX" db check
expect_ok "export with kernels" "kernels" "$MX" db export "$T/full.mxdb" --with-kernels
expect_ok "import with kernels" "0 kernels read" "$MX" db import "$T/full.mxdb" --with-kernels --trust "$(printf "%064d" 0)" --db "$T/third.db"

# ---- problems are reported, never crashed on --------------------------------
sql "$MXATTN_CACHE" "INSERT INTO kernels(key, arch, nvrtc_version, kernel_names, cubin, cubin_sha256, compile_ms, registers, shared_bytes, spill_bytes, created_at) VALUES('$(printf 'a%.0s' {1..64})', 'sm_90a', 12040, 'k', x'00', '$(printf 'b%.0s' {1..64})', 1, 1, 1, 0, 1);"
expect_error "check finds a bad kernel" "1" "$MX" db check
grep -q "1 with a bad hash" "$T/stdout" || fail "check report lacks the bad kernel: $(cat "$T/stdout")"

head -c 4096 /dev/urandom > "$T/noise.mxdb"
expect_error "import of noise" "1" "$MX" db import "$T/noise.mxdb"
expect_error "import of a missing file" "1" "$MX" db import "$T/missing.mxdb"
expect_error "merge of a missing file" "1" "$MX" db merge "$T/missing.mxdb"
expect_error "export to a missing directory" "1" "$MX" db export "$T/no/such/dir/x.mxdb"
touch "$T/plain.txt"
expect_error "db under a regular file" "1" "$MX" query --db "$T/plain.txt/sub/x.db"
expect_error "db action missing" "2" "$MX" db
expect_error "db action unknown" "2" "$MX" db frobnicate
expect_error "db import without FILE" "2" "$MX" db import
expect_error "db vacuum with a FILE" "2" "$MX" db vacuum extra
expect_error "db merge --with-kernels" "2" "$MX" db merge "$T/other.db" --with-kernels
expect_error "db unknown flag" "2" "$MX" db check --frob
expect_error "db --db without value" "2" "$MX" db check --db
expect_error "query unknown flag" "2" "$MX" query --colour red
expect_error "query non-numeric head dim" "2" "$MX" query --head-dim abc
expect_error "query head dim out of range" "2" "$MX" query --head-dim -5
expect_error "query bad dtype" "2" "$MX" query --dtype f32
expect_error "query bad causal" "2" "$MX" query --causal yes
expect_error "query missing value" "2" "$MX" query --gpu
expect_error "query stray argument" "2" "$MX" query h200
n=$("$MX" query --json | grep -c '"gpu":')
[ "$n" = 4 ] || fail "after the bad inputs the db has $n rows, wanted 4"

# ---- a file that is not ours is refused and left as it is ------------------
head -c 8192 /dev/urandom > "$T/noise.db"
cp "$T/noise.db" "$T/noise.copy"
expect_error "query of a file that is not ours" "1" "$MX" query --db "$T/noise.db"
grep -q "not an mxattn database" "$T/stderr" || fail "foreign file: $(cat "$T/stderr")"
cmp -s "$T/noise.db" "$T/noise.copy" || fail "a foreign file was modified"
ls "$T"/noise.db?* >/dev/null 2>&1 && fail "files were created beside a foreign file: $(ls "$T")"

# ---- a damaged database of ours is rebuilt from what still reads ------------
cp "$MXATTN_CACHE" "$T/damaged.db"
sql "$T/damaged.db" "UPDATE meta SET value=0 WHERE name='last_check'"
page=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT rootpage FROM sqlite_schema WHERE name=\"measurements\"").fetchone()[0])' "$T/damaged.db" 2>/dev/null ||
       sqlite3 "$T/damaged.db" "SELECT rootpage FROM sqlite_schema WHERE name='measurements'")
head -c 4096 /dev/urandom | dd of="$T/damaged.db" bs=4096 seek=$((page - 1)) conv=notrunc status=none
expect_ok "damaged db is rebuilt" "H200" "$MX" query --db "$T/damaged.db"
grep -q "warning: .*4 of 4 tuning results.*corrupt-" "$T/stderr" || fail "no warning about the damaged db: $(cat "$T/stderr")"
ls "$T"/damaged.db.corrupt-* >/dev/null 2>&1 || fail "damaged db was not kept aside"

"$MX" db --help | grep -q "with-kernels" || fail "db --help"
"$MX" query --help | grep -q -- "--head-dim" || fail "query --help"

if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "cli_db: all passed"
