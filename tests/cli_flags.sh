#!/usr/bin/env bash
# One dialect across the commands: every command parses its options the same
# way (--key value and --key=value alike, an unknown option is exit 2 with one
# line), the shared flags --family, --head-dim and --causal take the same
# words everywhere, data comes as JSON with --json, an unwritable stdout is a
# failure, and --help and the legal lists come from the parameter table
# (`mxattn params --json`), not from a copy.
# usage: bash tests/cli_flags.sh path/to/mxattn   (exit 0 pass, 1 fail)
source "$(dirname "$0")/support/cli_prologue.sh"
"$MX" db vacuum > /dev/null || { echo "cannot create the database"; exit 1; }
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
command -v python3 > /dev/null || { echo "skip: python3 reads the JSON"; exit 77; }

# expect NAME RC CMD...: exit status RC; a non-zero one has exactly one error
# line on stderr, and none is a signal or a traceback.
expect() {
  local name=$1 want=$2; shift 2
  "$@" > "$T/out" 2> "$T/err"
  local rc=$?
  if [ $rc -ne "$want" ]; then fail "$name: exit $rc (want $want): $(head -c 300 "$T/err")"; return 1; fi
  if grep -q "traceback" "$T/err"; then fail "$name: a traceback on stderr"; return 1; fi
  if [ $rc -ne 0 ] && [ "$(grep -c 'error' "$T/err")" -ne 1 ]; then
    fail "$name: want one error line, got: $(head -c 300 "$T/err")"; return 1
  fi
  echo "ok   $name"
}

json_ok() {  # json_ok NAME FILE: the file is one JSON value
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$2" 2>/dev/null \
    && echo "ok   $1 is JSON" || fail "$1: not JSON: $(head -c 200 "$2")"
}

have_nvrtc=0
"$MX" info | grep -qE '^nvrtc +[0-9]' && have_nvrtc=1
have_gpu=0
"$MX" info | grep -qE '^gpu +[0-9]' && have_gpu=1

# ---- every command: unknown options, values given to switches, --help ------
for cmd in info params gen compile run tune query db accuracy; do
  expect "$cmd --bogus" 2 "$MX" $cmd --bogus
  grep -q "unknown option '--bogus'" "$T/err" || fail "$cmd --bogus: not named as unknown: $(cat "$T/err")"
  expect "$cmd --bogus=1" 2 "$MX" $cmd --bogus=1
  expect "$cmd --help" 0 "$MX" $cmd --help
done
expect "info --json=1 (a switch takes no value)" 2 "$MX" info --json=1
expect "tune --db with no value" 2 "$MX" tune --db
grep -q "needs a value" "$T/err" || fail "tune --db: $(cat "$T/err")"

# ---- the legal lists come from the parameter table -------------------------
expect "params --json" 0 "$MX" params --json
cp "$T/out" "$T/params.json"
json_ok "params --json" "$T/params.json"
values() {  # values NAME: the parameter's legal values, comma-separated
  python3 -c 'import json,sys; p={x["name"]: x for x in json.load(open(sys.argv[1]))}[sys.argv[2]]; print(", ".join(p["values"]))' \
    "$T/params.json" "$1"
}
archs=$(values arch)
families=$(values family)
[ -n "$archs" ] && [ -n "$families" ] || fail "params --json lacks arch or family values"
for cmd in "compile --family f16 --head-dim 64" "tune --compile-only" "gen --family f16 --head-dim 64"; do
  expect "$cmd --arch sm_90" 2 "$MX" $cmd --arch sm_90
  grep -qF "unknown arch 'sm_90': one of $archs" "$T/err" || fail "$cmd --arch sm_90 lacks the legal list: $(cat "$T/err")"
done
for cmd in "gen --head-dim 64" "compile --head-dim 64" "params --head-dim 64" "run --head-dim 64" "tune" "query" \
           "accuracy --gpu"; do
  expect "$cmd --family f32" 2 "$MX" $cmd --family f32
  grep -qF "unknown family 'f32': one of" "$T/err" || fail "$cmd --family f32: $(cat "$T/err")"
done
grep -qF "$families" <("$MX" tune --help) || fail "tune --help does not list the families"
# gen --help: a flag for every parameter of the table, with its legal values.
"$MX" gen --help > "$T/gen_help"
for p in $(python3 -c 'import json,sys; print(" ".join(x["flag"] for x in json.load(open(sys.argv[1]))))' "$T/params.json"); do
  grep -q -- "^  $p " "$T/gen_help" || fail "gen --help lacks $p"
done
block_m=$(python3 -c 'import json,sys; print("|".join(next(x["values"] for x in json.load(open(sys.argv[1])) if x["name"] == "block_m")))' "$T/params.json")
grep -qF -- "  --block-m $block_m" "$T/gen_help" || fail "gen --help: --block-m's values are not the table's ($block_m)"

# ---- the parameter flags: values checked before any template runs ---------
expect "gen --head-dim abc" 2 "$MX" gen --family f16 --head-dim abc
expect "gen --block-m 48" 2 "$MX" gen --family f16 --head-dim 64 --block-m 48
expect "gen --block-m twice" 2 "$MX" gen --family f16 --head-dim 64 --block-m 64 --block-m 32
expect "gen illegal combination" 2 "$MX" gen --family f16 --head-dim 64 --block-m 16 --warps 8
expect "gen --head_dim spelling" 0 "$MX" gen --family f16 --head_dim 64

# ---- --key=value is --key value -------------------------------------------
expect "gen spaced" 0 "$MX" gen --family f16 --head-dim 80 --causal top-left --block-m 64
cp "$T/out" "$T/a.cu"
expect "gen with =" 0 "$MX" gen --family=f16 --head-dim=80 --causal=top-left --block-m=64
cmp -s "$T/a.cu" "$T/out" || fail "gen: --key=value gives other source than --key value"
# --causal's forms: the words; the old bare switch; bottom-right builds the same kernel
expect "gen bare --causal" 0 "$MX" gen --family f16 --head-dim 80 --causal --block-m 64
cmp -s "$T/a.cu" "$T/out" || fail "gen: bare --causal is not top-left"
expect "gen --causal bottom-right" 0 "$MX" gen --family f16 --head-dim 80 --causal bottom-right --block-m 64
cmp -s "$T/a.cu" "$T/out" || fail "gen: bottom-right is another kernel than top-left"
expect "gen --causal none" 0 "$MX" gen --family f16 --head-dim 80 --causal none --block-m 64
grep -q "causal=0" "$T/out" || fail "gen --causal none is not causal=0"

# params of one problem: the table gen renders, whichever spelling.
expect "params of a problem" 0 "$MX" params --family f16 --head-dim 80 --causal top-left --json
json_ok "params of a problem" "$T/out"
cp "$T/out" "$T/p1.json"
expect "params of a problem, =" 0 "$MX" params --family=f16 --head-dim=80 --causal=bottom-right --json
cmp -s "$T/p1.json" "$T/out" || fail "params: --key=value or bottom-right gives another table"
"$MX" gen --family f16 --head-dim 80 --causal top-left | sed -n 's|^// params: ||p' | head -1 > "$T/gen_params"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); want=dict(t.split("=",1) for t in open(sys.argv[2]).read().split()); assert all(d.get(k)==v for k,v in want.items()), (d,want)' \
  "$T/p1.json" "$T/gen_params" && echo "ok   params of a problem is gen's table" || fail "params of a problem differs from gen's header"

# Every command that describes a problem takes the same --causal words and
# refuses the same bad one.
for cmd in "gen --family f16 --head-dim 64" "compile --family f16 --head-dim 64" "params --family f16 --head-dim 64" \
           "run --family f16 --head-dim 64" "tune --compile-only" "query" "accuracy"; do
  expect "$cmd --causal sideways" 2 "$MX" $cmd --causal sideways
  grep -q "none, top-left or bottom-right" "$T/err" || fail "$cmd --causal sideways: $(cat "$T/err")"
done
for m in none top-left bottom-right 0 1 2; do
  expect "query --causal $m" 0 "$MX" query --causal $m --json
  expect "query --causal=$m" 0 "$MX" query --causal=$m --json
done
expect "accuracy --causal=none" 0 "$MX" accuracy --size=32 --head-dim=16 --causal=none --json
json_ok "accuracy --json" "$T/out"
expect "accuracy --head-dim 16,32" 0 "$MX" accuracy --size 32 --head-dim 16,32 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [r["head_dim"] for r in d] == [16, 32]' "$T/out" \
  || fail "accuracy --head-dim 16,32 is not one report per head dim"
expect "accuracy --causal top-left" 2 "$MX" accuracy --causal top-left

# The old spellings still parse: a later check (--gqa must divide --heads)
# answers instead of "unknown option", with or without NVRTC.
for old in "--head-dims 64,128" "--families f16" "--causal both" "--causal all" "--head-dim=64,128" \
           "--family=f16,int8-fp8" "--causal=none,bottom-right" "--seqs=1024" "--seq 1024"; do
  expect "tune $old" 2 "$MX" tune --compile-only $old --heads 16 --gqa 3
  grep -q "must divide" "$T/err" || fail "tune $old: $(cat "$T/err")"
done

# run: the flags parse the same either way; without a GPU the answer is the
# driver (exit 1), never a usage error.
if [ $have_gpu -eq 0 ]; then
  expect "run spaced" 1 "$MX" run --family f16 --head-dim 64 --causal bottom-right --seq 64 --json
  expect "run with =" 1 "$MX" run --family=f16 --head-dim=64 --causal=bottom-right --seq=64 --json
  expect "run bare --causal" 1 "$MX" run --family f16 --head-dim 64 --causal --seq 64
  expect "accuracy --gpu --family=f16" 1 "$MX" accuracy --gpu --family=f16 --size 32 --head-dim 16
  expect "accuracy --gpu --families f16" 1 "$MX" accuracy --gpu --families f16 --size 32 --head-dim 16
else
  expect "run --json" 0 "$MX" run --family=f16 --head-dim=64 --causal=bottom-right --seq=64 --reps 2 --json
  json_ok "run --json" "$T/out"
fi
expect "run --head-dim 0" 2 "$MX" run --family f16 --head-dim 9999 --seq 64

if [ $have_nvrtc -eq 1 ]; then
  expect "compile --json" 0 "$MX" compile --family=f16 --head-dim=64 --causal=none --json
  json_ok "compile --json" "$T/out"
  grep -q '"registers"' "$T/out" || fail "compile --json has no registers"
  expect "tune --compile-only --json" 0 "$MX" tune --compile-only --family=f16 --head-dim=64 --causal=none \
    --seqs=512 --max-candidates=1 --threads=1 --json
  json_ok "tune --json" "$T/out"
  expect "tune old spellings" 0 "$MX" tune --compile-only --family f16 --head-dims 64 --causal none --seqs 512 \
    --max-candidates 1 --threads 1 --json
  grep -q '"cache_hits": 1' "$T/out" || fail "tune --head-dims is another problem than --head-dim=: $(cat "$T/out")"
  expect "compile --json with --ptx" 2 "$MX" compile --family f16 --head-dim 64 --json --ptx
fi

# ---- --json on every command that prints data ------------------------------
expect "info --json" 0 "$MX" info --json; json_ok "info --json" "$T/out"
expect "query --json" 0 "$MX" query --json --family=f16 --head-dim=64; json_ok "query --json" "$T/out"
expect "db check --json" 0 "$MX" db check --json; json_ok "db check --json" "$T/out"
expect "db export --json" 0 "$MX" db export "$T/e.mxdb" --json; json_ok "db export --json" "$T/out"
expect "db import --json" 0 "$MX" db import "$T/e.mxdb" --json --db "$T/other.db"; json_ok "db import --json" "$T/out"
expect "db merge --json" 0 "$MX" db merge "$T/e.mxdb" --json; json_ok "db merge --json" "$T/out"
expect "db vacuum --json" 0 "$MX" db vacuum --json; json_ok "db vacuum --json" "$T/out"
"$MX" query --help | grep -q "speedup = the heuristic default's time over the" || fail "query --help does not say what speedup is"

# ---- an unwritable stdout is a failure ---------------------------------------
if [ -w /dev/full ]; then
  full() {  # full NAME CMD...: exits non-zero with a message when stdout is /dev/full
    local name=$1; shift
    "$@" > /dev/full 2> "$T/err"
    local rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$name > /dev/full: exit $rc"
    elif ! grep -q "cannot write the output" "$T/err"; then fail "$name > /dev/full: $(cat "$T/err")"
    else echo "ok   $name > /dev/full: exit $rc"; fi
  }
  full "info" "$MX" info
  full "info --json" "$MX" info --json
  full "params" "$MX" params
  full "params --json" "$MX" params --json
  full "gen" "$MX" gen --family f16 --head-dim 64
  full "query" "$MX" query
  full "query --json" "$MX" query --json
  full "db check" "$MX" db check
  full "accuracy" "$MX" accuracy --size 32 --head-dim 16
  full "accuracy --json" "$MX" accuracy --size 32 --head-dim 16 --json
  full "--help" "$MX" --help
  full "tune --help" "$MX" tune --help
  full "version" "$MX" --version
  [ $have_nvrtc -eq 1 ] && full "compile" "$MX" compile --family f16 --head-dim 64
fi

echo "$fails failed"
[ $fails -eq 0 ]
