#!/usr/bin/env bash
# The program's commands end to end: info, params, gen, compile, run, tune;
# bad input gets a one-line error, never a crash (>= 128): exit 2 when the
# command line is wrong (a value out of its legal set included), 1 when the
# work failed.
source "$(dirname "$0")/support/cli_prologue.sh"
tmp=$T

check() {  # check NAME EXPECTED_RC_PATTERN COMMAND...
  local name=$1 want=$2; shift 2
  "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ $rc -ge 128 ] || ! [[ $rc =~ ^($want)$ ]]; then
    echo "FAIL $name: exit $rc (want $want)"; sed 's/^/  /' "$tmp/err" | head -3; fails=$((fails + 1))
  elif [ $rc -ne 0 ] && [ "$(grep -c 'error' "$tmp/err")" -ne 1 ]; then
    echo "FAIL $name: want exactly one error line, got:"; sed 's/^/  /' "$tmp/err" | head -5; fails=$((fails + 1))
  else
    echo "ok   $name"
  fi
}

has_gpu=0
"$MX" info | grep -qE '^gpu +[0-9]' && has_gpu=1

check "info"                    0 "$MX" info
check "info --json"             0 "$MX" info --json
if command -v python3 > /dev/null; then
  "$MX" info --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "gpus" in d and "database" in d' \
    && echo "ok   info --json parses" || { echo "FAIL info --json does not parse"; fails=$((fails + 1)); }
fi
check "params"                  0 "$MX" params
grep -q "block_m" "$tmp/out" || { echo "FAIL params lists no block_m"; fails=$((fails + 1)); }
check "gen f16 d80"             0 "$MX" gen --family f16 --head-dim 80 --causal
grep -q "params: family=f16" "$tmp/out" || { echo "FAIL gen: no parameter header"; fails=$((fails + 1)); }
grep -q "#include" "$tmp/out" && { echo "FAIL gen: source includes a header"; fails=$((fails + 1)); }
"$MX" gen --family f16 --head-dim 80 --causal > "$tmp/a.cu"; "$MX" gen --family f16 --head-dim 80 --causal > "$tmp/b.cu"
cmp -s "$tmp/a.cu" "$tmp/b.cu" && echo "ok   gen is deterministic" || { echo "FAIL gen differs between runs"; fails=$((fails + 1)); }
check "gen head dim 0"          2     "$MX" gen --family f16 --head-dim 0
check "gen head dim 257"        2     "$MX" gen --family f16 --head-dim 257
check "gen head dim text"       2     "$MX" gen --family f16 --head-dim eighty
check "gen unknown family"      2     "$MX" gen --family f32 --head-dim 64
check "gen unknown flag"        2     "$MX" gen --family f16 --head-dim 64 --bogus
check "gen head dim abc, no family" 2 "$MX" gen --head-dim abc
grep -q "traceback" "$tmp/err" && { echo "FAIL gen printed a traceback"; fails=$((fails + 1)); }
check "gen illegal combination" 2 "$MX" gen --family f16 --head-dim 64 --block-m 16 --warps 8
check "gen without a family"    2 "$MX" gen --head-dim 64
check "gen illegal tile"        2     "$MX" gen --family f16 --head-dim 64 --block-m 48
if "$MX" info | grep -qE '^nvrtc +[0-9]'; then
  check "compile sm_90a"        0 "$MX" compile --family f16 --head-dim 96
  grep -q "registers" "$tmp/out" || { echo "FAIL compile reports no registers"; fails=$((fails + 1)); }
  check "compile sm_120a nvfp4" 0 "$MX" compile --family nvfp4 --head-dim 64 --arch sm_120a --ptx
  grep -q "kind::mxf4nvf4" "$tmp/out" || { echo "FAIL sm_120a PTX lacks the block-scaled MMA"; fails=$((fails + 1)); }
  check "compile unknown arch"  2     "$MX" compile --family f16 --head-dim 64 --arch sm_999
  check "compile unwritable"    "1|2" "$MX" compile --family f16 --head-dim 64 --cubin /proc/nope/k.cubin
  # --seq-q is accepted with the grid; decoding and prefill share kernels (one shape).
  check "tune decode compile"   0 "$MX" tune --compile-only --family f16 --head-dims 64 --causal none --seqs 512 \
                                    --seq-q 1,512 --max-candidates 1 --threads 1 --json
  grep -q '"shapes": 1' "$tmp/out" || { echo "FAIL tune decode compile: $(cat "$tmp/out")"; fails=$((fails + 1)); }
fi
check "run negative seq"        2     "$MX" run --family f16 --head-dim 64 --seq -5
check "run no family"           2     "$MX" run --head-dim 64
check "run bad causal"          2     "$MX" run --family f16 --head-dim 64 --causal sideways
check "tune bad dims"           2     "$MX" tune --head-dims 64,x
check "tune seq-q zero"         2     "$MX" tune --seq-q 0 --compile-only
check "tune settle negative"    2     "$MX" tune --settle-ms -5 --compile-only
check "tune scores-std zero"    2     "$MX" tune --scores-std 0 --compile-only
check "tune scores-std text"    2     "$MX" tune --scores-std abc --compile-only
echo "family=f16 head_dim=64 seq=256" > "$tmp/spec"
check "tune seq-q with spec"    2     "$MX" tune --seq-q 1 --spec "$tmp/spec" --compile-only
check "unknown command"         2     "$MX" frobnicate
if [ $has_gpu -eq 0 ]; then
  check "run without a GPU"     1 "$MX" run --family f16 --head-dim 64 --seq 128
  grep -q "driver\|GPU\|device" "$tmp/err" || { echo "FAIL run without GPU: unclear message"; fails=$((fails + 1)); }
fi
echo "$fails failed"
[ $fails -eq 0 ]
