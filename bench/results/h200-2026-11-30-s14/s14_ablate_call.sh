#!/usr/bin/env bash
# Session 14, call 7: what each piece of int8-fp8's unmasked tile costs (scripts/ablate_int8_fp8.py:
# timing only, the ablated kernels compute garbage). ~3 min, timeout_s 300.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
tpl="- $(ls -d $B/tpl/ablate-*/templates | tr '\n' ' ')"
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 64 --seq 16384"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="$tpl" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} timeout 250 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##; s#build-gpu/tpl/##; s#/templates##' >> "$S"
finish_call
exit 0
