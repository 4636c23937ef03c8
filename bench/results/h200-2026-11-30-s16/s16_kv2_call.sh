#!/usr/bin/env bash
# Session 16, call 10: kv-fused with two and three blocks an SM (KV_SMEM 100 and 60 KB: more
# warps for its latency-bound quantization, more heads in flight for the L2) against one (the
# branch, "-") and main, int8-fp8 D=128 N=4096 and 1024, 3 rounds. ~1.5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
runs=""
for p in "--head-dim 128 --seq 1024" "--head-dim 128 --seq 4096"; do runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'; done
AB_ROUNDS=3 AB_TEMPLATES="${AB_TEMPLATES:-- $B/tpl/kv2/templates $B/tpl/kv3/templates $B/tpl/main/templates}" MXATTN_BUILD=$B OUT=$L/ab \
  AB_RUNS=${runs%$'\n'} timeout 150 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
grep "^## ab median" "$L/ab.log" | sed 's#--batch 4 --heads 32##; s#^## ##' >> "$S"
finish_call
exit 0
