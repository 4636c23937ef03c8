#!/usr/bin/env bash
# Session 17, call 1: does the board's power limit rank int8-fp8's D=128 configurations
# differently from the tuner's short timings? The bench (nine rounds sharing 1.5 s of timing a
# row, --clocks) of the heuristic default beside five alternatives the tuner ranks below it in
# bursts, at N=4096 and 16384, non-causal, against cuDNN; nvidia-smi's clock-event reasons
# (power cap, thermal) logged through the run. ~4 min; timeout_s 420; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
nvidia-smi -q -d POWER,PERFORMANCE,TEMPERATURE > "$L/smi_before.txt" 2>&1
grep -E "Current Power Limit|Enforced Power Limit|Max Power Limit|Default Power Limit" "$L/smi_before.txt" | head -4 >> "$S"
Q=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown
nvidia-smi --query-gpu=timestamp,$Q --format=csv -lms 200 > "$L/smi_log.csv" 2>&1 &
SMI=$!
EXTRA="int8-fp8[variant=wgmma fuse_q=1],int8-fp8[variant=wgmma stages=3],int8-fp8[variant=wgmma exp_poly=1],int8-fp8[variant=wgmma pv_halves=1],int8-fp8[variant=wgmma block_n=64]"
EXTRA_ROWS="$EXTRA" BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 9 --rep-ms 1500 --clocks" \
  BENCH_TIMEOUT=330 MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
stamp "$(grep '^## bench' "$L/device_bench.log")"
kill $SMI 2>/dev/null
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-13 >> "$S"
# How often each clock-event reason was active over the run's samples.
python3 - "$L/smi_log.csv" >> "$S" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
if len(rows) < 2:
    print("smi log: no samples", rows[:2]); sys.exit()
head = [h.strip() for h in rows[0]]
data = [r for r in rows[1:] if len(r) == len(head)]
print("smi samples", len(data), "columns", head[1:])
for i, h in enumerate(head[4:], 4):
    active = sum(1 for r in data if r[i].strip() == "Active")
    print(f"  {h}: active in {active} of {len(data)}")
PY
finish_call
exit 0
