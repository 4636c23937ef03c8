#!/usr/bin/env bash
# Runs examples/quickstart.c's program.
#   example_quickstart.sh cpu|gpu QUICKSTART MXATTN
# cpu: where there is no GPU it must say so in one line and exit 0.
# gpu: where there is one it must run the problem, match the CPU reference on
#      its sampled rows and print a finite checksum of an O it wrote everywhere
#      (the program poisons O with NaN first).
# Each mode skips (77) where the other applies; `mxattn info` tells which.
set -uo pipefail
mode=$1 quickstart=$2 mxattn=$3
if "$mxattn" info 2>/dev/null | grep -qE '^gpu +none'; then gpu=0; else gpu=1; fi
out=$("$quickstart" 2>&1); rc=$?
printf '%s\n' "$out"
fail() { echo "example_quickstart ($mode): $*" >&2; exit 1; }
case $mode in
cpu)
  [ $gpu -eq 0 ] || { echo "a GPU is here: the gpu test runs the example"; exit 77; }
  [ $rc -eq 0 ] || fail "exit status $rc without a GPU, not 0"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "more than one line without a GPU"
  case $out in "quickstart: no NVIDIA GPU here ("*"): nothing to run") ;; *) fail "no 'no NVIDIA GPU here' line" ;; esac
  ;;
gpu)
  [ $gpu -eq 1 ] || { echo "no GPU: skipped"; exit 77; }
  [ $rc -eq 0 ] || fail "exit status $rc"
  printf '%s\n' "$out" | grep -qE '^check .*: ok$' || fail "no passing check line"
  sum=$(printf '%s\n' "$out" | sed -n 's/^checksum //p')
  [[ $sum =~ ^-?[0-9]+\.[0-9]+$ ]] || fail "checksum '$sum' is not a finite number"
  ;;
*) fail "mode must be cpu or gpu" ;;
esac
