#!/usr/bin/env bash
# Session 11's fourth device call: branch int8-overlap-fa3 (overlap=2 in FlashAttention-3's
# intra-warpgroup order: S(t+1) and P V(t) issued together, the softmax of t+1 under P V(t)),
# after session 10's two-accumulator form (PIPE) measured 14-18% slower than overlap=0 (call 1).
#   1. gpu_int8_wgmma's pipelined correctness tests under FA3 (64- and 128-key tiles);
#   2. end to end A/B (`mxattn run --reps 100`, 3 interleaved rounds) under FA3: the default
#      (overlap=0, 128 keys), overlap=0 and overlap=2 at 64 and at 128 keys; int8-fp8 D=64 and
#      128, N=4096 and 16384, B=4 H=32;
#   3. ncu source counters of overlap=2 D=64 128-key tiles N=4096 (instructions and stalls a
#      warp-tile), its SASS.
# Prepare here: scripts/ab_templates.sh build-gpu int8-overlap-fa3, gpu_int8_wgmma of the branch
# as build-gpu/tests/gpu_int8_wgmma_fa3, the cubin; timeout_s 580, everything inside stops by 540 s.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
FA3=$B/tpl/int8-overlap-fa3/templates
stamp start
cuobjdump -sass $B/sass/fa3_d64_bn128.cubin > "$L/fa3_d64_bn128.sass" 2>&1
for t in '*pipelined_head*' '*pipelined_len*'; do
  MXATTN_TEMPLATE_DIR=$FA3 timeout 120 $B/tests/gpu_int8_wgmma_fa3 "$t" > "$L/test_${t//\*/}.log" 2>&1
  stamp "gpu_int8_wgmma $t under FA3 rc=$? $(grep -E 'PASSED|FAILED' "$L/test_${t//\*/}.log" | tail -1)"
done
cfg() { echo "--config 'variant=wgmma overlap=$1 block_m=64 warps=4 block_n=$2 stages=3'"; }
runs=""
for p in "--head-dim 64 --seq 4096" "--head-dim 128 --seq 4096" "--head-dim 64 --seq 16384" "--head-dim 128 --seq 16384"; do
  for c in "" "$(cfg 0 64)" "$(cfg 2 64)" "$(cfg 0 128)" "$(cfg 2 128)"; do
    runs+="--family int8-fp8 $p --batch 4 --heads 32 $c"$'\n'
  done
done
AB_TEMPLATES="$FA3" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab AB_RUNS=$runs \
  timeout $((460 - SECONDS)) bash scripts/device.sh --ab > "$L/ab.log" 2>&1
stamp "ab rc=$?"
awk '{k=""; for (i=5;i<=NF;i++) k=k" "$i; n[k]++; if (!(k in b) || $3+0<b[k]) b[k]=$3+0} END{for (k in b) printf "best %.4f ms (%d rounds)%s\n", b[k], n[k], k}' "$L/ab/ab.txt" | sed 's#--batch 4 --heads 32##' | sort -k6 >> "$S"
MXATTN_TEMPLATE_DIR=$FA3 timeout $((530 - SECONDS)) ncu --set full --clock-control none -k regex:'int8_fp8_d64_[0-9a-f]+$' -c 1 -o "$L/attn" \
  $B/mxattn run --family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 \
  --config 'variant=wgmma overlap=2 block_m=64 warps=4 block_n=128 stages=3' > "$L/ncu.log" 2>&1
if [[ -f "$L/attn.ncu-rep" ]]; then
  ncu --import "$L/attn.ncu-rep" --page source --print-source sass --csv > "$L/src.csv" 2>&1
  python3 scripts/ncu_source_lines.py "$L/src.csv" > "$L/attn_source_lines.txt"
  ncu --import "$L/attn.ncu-rep" --page details > "$L/details.txt" 2>&1
  grep -E "Duration|Registers Per|Issue Slots Busy|Executed Ipc A|Achieved Occupancy|Tensor" "$L/details.txt" | head -12 >> "$S"
  rm -f "$L/attn.ncu-rep" "$L/src.csv"
  stamp "ncu: $(awk 'NR>1{s+=$2} END{printf "%.1f warp instructions a warp-tile (262144 tiles x 4 warps)", s/1048576}' "$L/attn_source_lines.txt")"
fi
finish_call
exit 0
