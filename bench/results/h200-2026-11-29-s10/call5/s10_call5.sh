#!/usr/bin/env bash
# Session 10's call 5 (~2.5 min; timeout_s 240): where int8-fp8's attention kernel waits.
# ncu --set full (source counters: executed instructions and stall samples per SASS line) of the
# default kernel at D=128 N=4096 B=4 H=32, its source page condensed on the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
B=${MXATTN_BUILD:-build-gpu}
L=$OUT/logs; mkdir -p "$L"
export LD_LIBRARY_PATH=$PWD/$B/testlib MXATTN_CACHE=/tmp/mx.db
timeout 150 ncu --set full --clock-control none -k regex:'int8_fp8_d128_[0-9a-f]+$' -c 1 -o "$L/attn" \
  $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 > "$L/ncu.log" 2>&1
echo "ncu rc=$?"
ncu --import "$L/attn.ncu-rep" --page source --print-source sass --csv > "$L/src.csv" 2>&1
ncu --import "$L/attn.ncu-rep" --page details > "$L/details.txt" 2>&1
python3 - "$L/src.csv" > "$L/attn_source_lines.txt" <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]; data = [r for r in rows[2:] if len(r) > 30]
ie = hdr.index("Instructions Executed"); samp = hdr.index("Warp Stall Sampling (All Samples)")
sc = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
print("# address, warp instructions executed, stall samples, top two stall reasons, SASS")
for r in data:
    st = sorted(((int(r[i]), hdr[i][6:]) for i in sc if r[i].isdigit()), reverse=True)[:2]
    print(r[0][-5:], r[ie].rjust(9), r[samp].rjust(6), " ".join(f"{n}:{c}" for c, n in st if c).ljust(34), r[1].strip())
PY
rm -f "$L/attn.ncu-rep" "$L/src.csv"
tail -3 "$L/ncu.log"; wc -l "$L/attn_source_lines.txt"
grep -E "Duration|Registers|Achieved Occupancy|Issue Slots Busy|Tensor|Executed Ipc" "$L/details.txt" | head -20
