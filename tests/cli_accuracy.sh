#!/bin/bash
# mxattn accuracy: the census line, machine-readable output, and bad input
# handled with an error line and exit 1/2, never a crash; --gpu fails with one
# line where there is no GPU and, where there is, gives a correct f16 row.
# usage: bash tests/cli_accuracy.sh /path/to/mxattn
set -u
MXATTN=${1:?usage: cli_accuracy.sh /path/to/mxattn}
if [ ! -x "$MXATTN" ]; then echo "FAIL: $MXATTN is not an executable" >&2; exit 1; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Small sizes keep this quick under ASan; the census does not depend on size.
"$MXATTN" accuracy --size 64 --head-dim 32 >"$TMP/table" 2>"$TMP/err"
rc=$?
[ $rc -eq 0 ] || fail "table run exited $rc: $(cat "$TMP/err")"
grep -Eq 'E4M3 distinct non-negative magnitudes +127 +127' "$TMP/table" || fail "census line (127) missing"
grep -Eq 'in \[0, 0\.167\] +35 +35' "$TMP/table" || fail "census line (35) missing"
grep -Eq 'bound on distinct direct-P values.* 280 +280' "$TMP/table" || fail "280 bound missing"

"$MXATTN" accuracy --size 64 --head-dim 32 --json >"$TMP/json" 2>"$TMP/err" || fail "--json exited non-zero"
if command -v python3 >/dev/null 2>&1; then
    python3 - "$TMP/json" <<'EOF' || fail "--json output does not parse or lacks the census"
import json, sys
d = json.load(open(sys.argv[1]))
figs = {f["name"]: f for f in d["figures"]}
assert figs["E4M3 distinct non-negative magnitudes"]["ours"] == 127
assert figs["... in [0, 0.167]"]["ours"] == 35
assert d["seed"] == 0 and d["size"] == 64
EOF
else
    grep -q '"figures": \[' "$TMP/json" || fail "--json lacks figures"
    grep -q '"name": "E4M3 distinct non-negative magnitudes", "ours": 127' "$TMP/json" || fail "--json census"
fi

"$MXATTN" accuracy --size 64 --head-dim 32 --csv >"$TMP/csv" || fail "--csv exited non-zero"
head -1 "$TMP/csv" | grep -q '^table,name,ours,notes$' || fail "--csv header"

# Deterministic: the same seed gives the same bytes, another seed other numbers.
"$MXATTN" accuracy --size 64 --head-dim 32 --csv --seed 0 >"$TMP/csv0"
cmp -s "$TMP/csv" "$TMP/csv0" || fail "same seed, different output"
"$MXATTN" accuracy --size 64 --head-dim 32 --csv --seed 7 >"$TMP/csv7"
cmp -s "$TMP/csv" "$TMP/csv7" && fail "--seed 7 changed nothing"

"$MXATTN" accuracy --size 64 --head-dim 32 --plot "$TMP/sweep.svg" >/dev/null || fail "--plot exited non-zero"
grep -q '<svg' "$TMP/sweep.svg" && grep -q '</svg>' "$TMP/sweep.svg" || fail "--plot wrote no SVG"

"$MXATTN" accuracy --help >/dev/null || fail "--help exited non-zero"

# Bad input: exit 1 or 2, an error line naming the command, no crash (>= 128).
expect_error() {
    local want=$1; shift
    "$MXATTN" accuracy "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ $rc -ge 128 ]; then fail "crash ($rc) on: $*"; return; fi
    [ $rc -eq "$want" ] || fail "exit $rc (want $want) on: $*"
    [ "$(grep -c 'mxattn accuracy: error:' "$TMP/err")" -eq 1 ] || fail "no single error line on: $* ($(cat "$TMP/err"))"
    # cli_usage_error adds one "(see --help)" hint line; nothing else may appear.
    [ "$(wc -l <"$TMP/err")" -le 2 ] || fail "more than one message on: $*"
    [ -s "$TMP/out" ] && fail "stdout not empty on: $*"
    return 0
}
expect_error 2 --bogus
expect_error 2 --size -5
expect_error 2 --size abc
expect_error 2 --size 12x
expect_error 2 --size
expect_error 2 --head-dim 0
expect_error 2 --seed -1
expect_error 2 --seed 1.5
expect_error 2 --k-mean nan
expect_error 2 --json --csv
expect_error 1 --plot "$TMP/no/such/dir/out.svg"
expect_error 2 --families f16
expect_error 2 --gpu --families f16,bogus
expect_error 2 --gpu --families ""
expect_error 2 --gpu --plot "$TMP/sweep.svg"

# --gpu: without a GPU, one error line and exit 1; with one (as `mxattn info`
# lists it), the table, whose f16 rows must be right.
if "$MXATTN" info 2>/dev/null | grep -q '^gpu [0-9]'; then
    # A private database: the default configurations, and nothing left behind.
    MXATTN_CACHE="$TMP/cache.db" "$MXATTN" accuracy --gpu --size 256 --head-dim 128 --csv \
        >"$TMP/gpu.csv" 2>"$TMP/err"
    rc=$?
    # 1 means some family's row failed: the table says which (not this test's business).
    if [ $rc -ge 2 ]; then fail "--gpu exited $rc: $(cat "$TMP/err")"; fi
    [ $rc -eq 1 ] && echo "note: --gpu reported failing rows: $(cat "$TMP/err")" >&2
    [ "$(grep -c '^t=1,' "$TMP/gpu.csv")" -eq 8 ] || fail "--gpu: want 8 family rows at t=1"
    # Columns: experiment,family,direct_p,block_n,status,failed,unwritten,gpu_cos,...
    awk -F, '$1 == "t=1" && $2 == "f16" { found = 1; if ($5 != "ok" || !($8 > 0.9999)) bad = 1 }
             END { exit !(found && !bad) }' "$TMP/gpu.csv" ||
        fail "--gpu: f16 row not ok with cos > 0.9999: $(grep '^t=1,f16,' "$TMP/gpu.csv")"
    awk -F, '$2 == "f16" && $5 != "ok" { bad = 1 } END { exit bad }' "$TMP/gpu.csv" || fail "--gpu: an f16 row failed"
    MXATTN_CACHE="$TMP/cache.db" "$MXATTN" accuracy --gpu --size 64 --head-dim 64 --families f16 --json \
        >"$TMP/gpu.json" 2>"$TMP/err"
    [ $? -eq 0 ] || fail "--gpu --families f16 --json exited non-zero: $(cat "$TMP/err")"
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$TMP/gpu.json" <<'EOF' || fail "--gpu --json output does not parse or is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"]
assert rows and all(r["family"] == "f16" for r in rows)
assert all(r["status"] == "ok" and r["unwritten"] == 0 and r["gpu_cos"] > 0.9999 for r in rows)
EOF
    fi
else
    expect_error 1 --gpu
    grep -q 'no GPU found' "$TMP/err" || fail "--gpu without a GPU does not say so: $(cat "$TMP/err")"
    expect_error 1 --gpu --json --families f16
fi

if [ $failures -ne 0 ]; then echo "$failures failure(s)" >&2; exit 1; fi
echo "cli_accuracy: all checks passed"
