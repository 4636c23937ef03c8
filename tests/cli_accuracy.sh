#!/bin/bash
# mxattn accuracy: the census line, machine-readable output, and bad input
# handled with an error line and exit 1/2, never a crash.
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
expect_error 1 --gpu
grep -q 'issue 5' "$TMP/err" || fail "--gpu message does not name issue 5"

if [ $failures -ne 0 ]; then echo "$failures failure(s)" >&2; exit 1; fi
echo "cli_accuracy: all checks passed"
