#!/usr/bin/env bash
# Session 23, call 3 (a third machine start): (1) bench/micro/sustained_power.py: each
# implementation alone in a 3 s loop at D=128 N=4096 and 16384, instant power, SM clock and
# throttle reasons every 20 ms: joules a call, ours against cuDNN's; at N=4096 also three f16
# configurations beside the default (not persistent, stages=2, 176-key tiles); (2) issue #7's
# bench with the untuned defaults (7 rounds, 1200 ms a row, clocks).  ~3.5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
F="variant=wgmma overlap=1 block_m=128 warps=12"
timeout 150 python3 bench/micro/sustained_power.py --seqs 4096,16384 --seconds 3 > "$L/power.md" 2>&1
stamp "sustained_power rc=$?"; cat "$L/power.md" >> "$S"
timeout 90 python3 bench/micro/sustained_power.py --seqs 4096 --seconds 3 \
  --impls "sdpa-cudnn;f16;f16[$F persistent=0 block_n=128 stages=3];f16[$F persistent=1 block_n=128 stages=2];f16[$F persistent=1 block_n=176 stages=2];sdpa-cudnn" \
  > "$L/power_f16.md" 2>&1
stamp "sustained_power f16 rc=$?"; grep "^| [sf]" "$L/power_f16.md" >> "$S"
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=$((560 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench7 bash scripts/device.sh --bench > "$L/bench7.log" 2>&1
stamp "bench #7: $(grep '^## bench' "$L/bench7.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench7/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 >> "$S"
cp "$L/bench7/bench/results.md" "$OUT/bench7_results.md" 2>/dev/null
finish_call
exit 0
