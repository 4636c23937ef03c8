#!/usr/bin/env bash
# The first device calls of the session after 2026-11-29-s10 (docs/status-2026-11-29-s10.md), for
# three branches (two stacked on the first), none of it yet run on a GPU:
#   WARP0 = tma-issue-warp0~1: the one-warpgroup wgmma kernels issue their TMA copies under
#           `warp == 0 && elect_one()` (warp broadcast from lane 0) instead of threadIdx.x == 0;
#   KS    = tma-issue-warp0:   + int8-fp8's K scales by 16-byte loads;
#   PIPE  = int8-intra-overlap (on KS): knob overlap=2, S(t+1) issued before the softmax of t
#           (block_m=64 warps=4 block_n=64 stages=3; 222 registers at D=128, two blocks an SM);
#   PVH   = pv-halves (on KS): attend_tile's P V in two column halves, the first folded into O
#           under the second's MMAs (same registers).
# `timing` (~6 min; timeout_s 420, everything inside stops by 380 s):
#   1. ncu source counters of KS's int8-fp8 D=128 attention kernel (instructions a warp and a
#      tile: 624 on main in s10 call 5; prediction ~570), its SASS;
#   2. attention kernel times (ncu) and end to end (--ab) for MAIN, WARP0, KS, PVH: int8-fp8 D=128 and
#      D=64 at N=4096 (and 16384 end to end), f16 D=64 N=1024 (its one-warpgroup default);
#   3. under PIPE, end to end: the default, overlap=0 and overlap=2 on the 64-key tile, D=128 and
#      64, N=4096 and 16384.
# `tests` (~6 min; timeout_s 480, stops by 440 s): gpu_int8_wgmma and gpu_wgmma under KS,
#   gpu_int8_wgmma under PVH, and gpu_int8_wgmma's overlap=2 tests under PIPE, in parallel.
# `bench` (~8 min; timeout_s 560, stops by 520 s), after merging what held: `mxattn tune` of f16
#   and int8-fp8 at the issue's shapes (8 candidates each; f16 D=64 N=4096 causal read 0.90-0.96
#   on defaults set from non-causal runs), then bench/attention.py on that database, 3 rounds,
#   clocks logged, N=1024 included.
# Prepare here: bash scripts/s11_prepare.sh (build-dev built from main; ~2 min).
# then, carrying build-gpu:  bash scripts/s11_first_call.sh timing   and   ... tests   (and, merged, ... bench)
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
MAIN=$B/tpl/main/templates WARP0=$B/tpl/tma-issue-warp0_1/templates KS=$B/tpl/tma-issue-warp0/templates
PIPE=$B/tpl/int8-intra-overlap/templates PVH=$B/tpl/pv-halves/templates
MODE=${1:-timing}

timing() {
  stamp start
  cuobjdump -sass $B/sass/int8fp8_d128.cubin > "$L/int8fp8_d128.sass" 2>&1
  MXATTN_TEMPLATE_DIR=$KS timeout 100 ncu --set full --clock-control none -k regex:'int8_fp8_d128_[0-9a-f]+$' -c 1 -o "$L/attn" \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 > "$L/ncu.log" 2>&1
  ncu --import "$L/attn.ncu-rep" --page source --print-source sass --csv > "$L/src.csv" 2>&1
  python3 scripts/ncu_source_lines.py "$L/src.csv" > "$L/attn_source_lines.txt"
  rm -f "$L/attn.ncu-rep" "$L/src.csv"
  stamp "ncu: $(awk 'NR>1{s+=$2} END{printf "%.1f warp instructions a warp-tile (262144 tiles x 4 warps)", s/1048576}' "$L/attn_source_lines.txt")"
  local runs=$'--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32\n--family int8-fp8 --head-dim 64 --seq 4096 --batch 4 --heads 32\n--family f16 --head-dim 64 --seq 1024 --batch 4 --heads 32'
  AB_TEMPLATES="$MAIN $WARP0 $KS $PVH" KT_RUNS=$runs KT_KERNELS='_d(64|128)_[0-9a-f]+$' MXATTN_BUILD=$B OUT=$L/kt timeout 150 bash scripts/device.sh --kernel-times > "$L/kt.log" 2>&1
  grep '^## kt' "$L/kt.log" | sed 's#build-gpu/tpl/##; s#/templates##' >> "$S"; stamp kt done
  AB_TEMPLATES="$MAIN $WARP0 $KS $PVH" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab \
    AB_RUNS=$runs$'\n--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32' \
    timeout 150 bash scripts/device.sh --ab > "$L/ab.log" 2>&1
  grep '^## ab' "$L/ab.log" | sed 's#build-gpu/tpl/##; s#/templates##' >> "$S"; stamp ab done
  local cfg=(--config "'variant=wgmma overlap=0 block_m=64 warps=4 block_n=64 stages=3'"
             --config "'variant=wgmma overlap=2 block_m=64 warps=4 block_n=64 stages=3'")
  local p pipe_runs=""
  for p in "--head-dim 128 --seq 4096" "--head-dim 64 --seq 4096" "--head-dim 128 --seq 16384" "--head-dim 64 --seq 16384"; do
    pipe_runs+="--family int8-fp8 $p --batch 4 --heads 32"$'\n'
    pipe_runs+="--family int8-fp8 $p --batch 4 --heads 32 ${cfg[0]} ${cfg[1]}"$'\n'
    pipe_runs+="--family int8-fp8 $p --batch 4 --heads 32 ${cfg[2]} ${cfg[3]}"$'\n'
  done
  AB_TEMPLATES="$PIPE" AB_ROUNDS=3 MXATTN_BUILD=$B OUT=$L/ab_pipe AB_RUNS=$pipe_runs \
    timeout $((380 - SECONDS)) bash scripts/device.sh --ab > "$L/ab_pipe.log" 2>&1
  grep '^## ab' "$L/ab_pipe.log" | sed 's#build-gpu/tpl/##; s#/templates##' >> "$S"; stamp ab_pipe done
}

tests() {
  stamp start
  local t left=440
  for t in gpu_int8_wgmma gpu_wgmma; do
    ( MXATTN_TEMPLATE_DIR=$KS timeout $left $B/tests/$t > "$L/$t.log" 2>&1; stamp "$t under KS rc=$? $(grep -E 'PASSED|FAILED' "$L/$t.log" | tail -1)" ) &
  done
  ( MXATTN_TEMPLATE_DIR=$PVH timeout $left $B/tests/gpu_int8_wgmma > "$L/gpu_int8_wgmma_pvh.log" 2>&1
    stamp "gpu_int8_wgmma under PVH rc=$? $(grep -E 'PASSED|FAILED' "$L/gpu_int8_wgmma_pvh.log" | tail -1)" ) &
  ( MXATTN_TEMPLATE_DIR=$PIPE timeout $left $B/tests/gpu_int8_wgmma_pipe '*pipelined*' > "$L/pipelined.log" 2>&1
    stamp "gpu_int8_wgmma pipelined under PIPE rc=$? $(grep -E 'PASSED|FAILED' "$L/pipelined.log" | tail -1)" ) &
  wait
}

bench() {
  stamp start
  timeout 240 $B/mxattn tune --family f16,int8-fp8 --head-dims 128,64 --seqs 4096,16384 --causal both --batch 4 --heads 32 \
    --max-candidates 8 > "$L/tune.log" 2>&1
  stamp "tune rc=$?"
  $B/mxattn query > "$L/query.log" 2>&1; cat "$L/query.log" >> "$S"
  BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 1024,4096,16384 --causal both --baselines sdpa-flash,sdpa-cudnn --rounds 3 --clocks" \
    BENCH_TIMEOUT=$((520 - SECONDS)) MXATTN_BUILD=$B OUT=$L bash scripts/device.sh --bench > "$L/device_bench.log" 2>&1
  stamp "$(grep '^## bench' "$L/device_bench.log")"
  grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench/results.md" 2>/dev/null | cut -d'|' -f2-8 >> "$S"
}

case $MODE in
  timing) timing ;;
  tests) tests ;;
  bench) bench ;;
  *) echo "usage: bash scripts/s11_first_call.sh timing|tests|bench" >&2; exit 2 ;;
esac
finish_call
exit 0
