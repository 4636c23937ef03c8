#!/usr/bin/env bash
# Session 15: does a softmax whose exponentials do not wait for the tile's maximum pay? Timing only
# (scripts/ablate_int8_fp8.py's stalemax and nomax folders; garbage out). Prepare:
# scripts/prepare_gpu_build.sh && python3 scripts/ablate_int8_fp8.py build-gpu; carry build-gpu.
# ~3 min, timeout_s 240. Prediction (bench/NOTES.md, fifteenth session): stalemax -3 to -5% at
# D=128, -4 to -6% at D=64, where nomax (no maximum at all) measured -6 to -7.7% in session 14.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
tpl="- $B/tpl/ablate-stalemax/templates $B/tpl/ablate-nomax/templates"
runs=""
for p in "--head-dim 128 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 64 --seq 16384"; do
  runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
done
AB_ROUNDS=3 AB_TEMPLATES="$tpl" MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=${runs%$'\n'} timeout 200 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##; s#build-gpu/tpl/##; s#/templates##' >> "$S"
finish_call
exit 0
