#!/usr/bin/env bash
# Session 22, call 1: cluster=2 (two shared-ring blocks a cluster, each K/V tile multicast into
# both).  Checks against the CPU reference (hangs caught by timeout), compute-sanitizer, the GPU
# tests of the shared ring and the pair, then the bench beside cuDNN with the pair as extra rows.
# Prediction (bench/NOTES.md, session 22): D=128 N=16384 0 to +2%, N=4096 level.
# ~9 min; timeout_s 590; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
C3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1 cluster=2"
C4="variant=wgmma block_m=256 warps=16 block_n=128 stages=3 rowsum_mma=1 cluster=2"
C2="variant=wgmma block_m=128 warps=8 block_n=64 stages=3 cluster=2"
while IFS='|' read -r cfg args; do
  r=$(timeout 60 $B/mxattn run $args --reps 2 --check-heads 2 --config "$cfg" 2>&1 | grep -E "^error|fail|rel|TOPS" | tr -s ' ' | tr '\n' ' ')
  stamp "check rc=$? [$cfg] $args | $r"
done <<EOR
$C3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 1 --heads 4
$C3|--family int8-fp8 --head-dim 128 --seq-q 1930 --seq-k 2177 --batch 2 --heads 4 --kv-heads 2 --causal bottom-right
$C3|--family int8-fp8 --head-dim 96 --seq-q 1000 --seq-k 1300 --batch 2 --heads 4 --kv-heads 2
$C4|--family int8-fp8 --head-dim 64 --seq-q 700 --seq-k 3000 --batch 2 --heads 3
$C2|--family int8-fp8 --head-dim 40 --seq-q 900 --seq-k 900 --batch 1 --heads 3 --causal top-left
EOR
sanitize_each "" <<EOR
$C3|--family int8-fp8 --head-dim 128 --seq-q 450 --seq-k 700 --batch 2 --heads 2
$C3|--family int8-fp8 --head-dim 128 --seq-q 1000 --seq-k 800 --batch 1 --heads 2 --causal bottom-right
EOR
timeout 200 $B/tests/gpu_int8_wgmma "*cluster*" > "$L/gpu_cluster.log" 2>&1
stamp "gpu_int8_wgmma *cluster* rc=$?: $(grep -E 'PASSED|FAILED|rel_l1|fail' "$L/gpu_cluster.log" | head -5 | tr '\n' ' ')"
BENCH_ARGS="--families int8-fp8 --dims 128 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  EXTRA_ROWS="int8-fp8[$C3]" BENCH_TIMEOUT=170 MXATTN_BUILD=$B OUT=$L/b128 bash scripts/device.sh --bench > "$L/b128.log" 2>&1
stamp "bench D=128: $(grep '^## bench' "$L/b128.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/b128/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$C3\]/[pair3]/" >> "$S"
BENCH_ARGS="--families int8-fp8 --dims 64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 5 --rep-ms 1200 --clocks" \
  EXTRA_ROWS="int8-fp8[$C4]" BENCH_TIMEOUT=$((560 - SECONDS)) MXATTN_BUILD=$B OUT=$L/b64 bash scripts/device.sh --bench > "$L/b64.log" 2>&1
stamp "bench D=64: $(grep '^## bench' "$L/b64.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/b64/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-12 | sed "s/\[$C4\]/[pair4]/" >> "$S"
finish_call
exit 0
