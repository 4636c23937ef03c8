#!/usr/bin/env bash
# Session 20, call 1: int8-fp8's three consumer warpgroups sharing one K/V ring through release
# counters (KERNEL_SHARED, block_m=192 warps=12 at D=128): correctness against the CPU reference,
# compute-sanitizer, an A/B against the one-warpgroup default, ncu's L2 traffic of both, and a
# power-capped bench row; plus the SASS of ex2.approx.f16x2 (is there a packed MUFU on sm_90a?).
# Prediction: a third of the L2-to-SM bytes; level to +5% at N=16384 (less energy a tile under
# the 700 W cap), level or slower at N=4096 (one block an SM: its prologue is not covered).
# ~8 min; timeout_s 590; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
SH3="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
SH2="variant=wgmma block_m=192 warps=12 block_n=128 stages=2 rowsum_mma=1"
SH64="variant=wgmma block_m=192 warps=12 block_n=128 stages=3 rowsum_mma=1"
# A. correctness (error lines of the default and the shared kernel side by side)
while IFS='|' read -r cfg args; do
  for c in "" "$cfg"; do
    r=$(timeout 60 $B/mxattn run $args --reps 2 --check-heads 2 ${c:+--config "$c"} 2>&1 | grep -E "^error|rel|fail" | tr -s ' ' | tr '\n' ' ')
    stamp "check [${c:-default}] $args | $r"
  done
done <<EOR
$SH3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 1 --heads 4
$SH3|--family int8-fp8 --head-dim 128 --seq-q 1000 --seq-k 1300 --batch 2 --heads 4 --kv-heads 2 --causal bottom-right
$SH2|--family int8-fp8 --head-dim 128 --seq-q 577 --seq-k 2049 --batch 1 --heads 3 --layout bnhd
$SH64|--family int8-fp8 --head-dim 64 --seq 3000 --batch 1 --heads 4 --causal top-left
$SH64 fuse_q=1|--family int8-fp8 --head-dim 64 --seq 1000 --batch 1 --heads 2
variant=wgmma block_m=192 warps=12 block_n=64 stages=3|--family int8-fp8 --head-dim 72 --seq 700 --batch 1 --heads 2
EOR
# B. sanitizers on the shared kernel, small
sanitize_each "" <<EOR
$SH3|--family int8-fp8 --head-dim 128 --seq-q 450 --seq-k 700 --batch 1 --heads 2 --causal bottom-right
$SH2|--family int8-fp8 --head-dim 128 --seq 520 --batch 1 --heads 2
EOR
# C. A/B, interleaved rounds (best ms of 50 launches)
for round in 1 2 3; do
  while IFS='|' read -r name cfg args; do
    t=$(timeout 120 $B/mxattn run $args --reps 50 --check-heads 0 ${cfg:+--config "$cfg"} 2>&1 | awk '/^time/ {print $2, $5}')
    echo "$round $name ${t:-failed failed} $args" >> "$L/ab.txt"
  done <<EOR
default||--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
shared3|$SH3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
shared2|$SH2|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32
default||--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
shared3|$SH3|--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
shared2|$SH2|--family int8-fp8 --head-dim 128 --seq 16384 --batch 4 --heads 32
default||--family int8-fp8 --head-dim 64 --seq 16384 --batch 4 --heads 32
shared3|$SH64|--family int8-fp8 --head-dim 64 --seq 16384 --batch 4 --heads 32
default||--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --causal bottom-right
shared3|$SH3|--family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --causal bottom-right
EOR
done
ab_best "$L/ab.txt"
# D. ncu: L2 and DRAM traffic of the attention kernel, default and shared
for cfg in "" "$SH3"; do
  timeout 90 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis -k regex:'^mxattn_int8_fp8_d128_[0-9a-f]+$' -c 1 \
    $B/mxattn run --family int8-fp8 --head-dim 128 --seq 4096 --batch 4 --heads 32 --reps 1 --check-heads 0 ${cfg:+--config "$cfg"} < /dev/null > "$L/ncu.tmp" 2>&1
  cat "$L/ncu.tmp" >> "$L/ncu.log"
  stamp "ncu [${cfg:-default}]: $(grep -E 'Duration|L2 Cache Throughput|DRAM Throughput|Memory Throughput|L2 Hit Rate|Mem Busy|Max Bandwidth|L1/TEX Hit|Compute \(SM\)' "$L/ncu.tmp" | tr -s ' ' | tr '\n' ';')"
done
# F. packed ex2 on sm_90a?
printf '%s\n' '__global__ void k(unsigned *x) { unsigned v = x[threadIdx.x], r; asm("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(v)); x[threadIdx.x] = r; }' > /tmp/e.cu
(cd /tmp && nvcc -arch=sm_90a -cubin -o e.cubin e.cu && cuobjdump -sass e.cubin | grep -E "MUFU|HADD2|HMUL2|PRMT|F2F" > "$L/ex2_f16x2.sass" 2>&1)
stamp "ex2.approx.f16x2 SASS: $(tr -s ' ' < "$L/ex2_f16x2.sass" | tr '\n' ';')"
# E. under the power cap: bench rows beside cuDNN
BENCH_ARGS="--families int8-fp8 --dims 128,64 --seqs 4096,16384 --causal no --baselines sdpa-cudnn --rounds 5 --rep-ms 1000 --clocks" \
  EXTRA_ROWS="int8-fp8[$SH3]" BENCH_TIMEOUT=$((560 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench bash scripts/device.sh --bench > "$L/bench.log" 2>&1
stamp "bench: $(grep '^## bench' "$L/bench.log")"
grep -E "^\| (int8-fp8|sdpa-cudnn)" "$L/bench/bench/results.md" 2>/dev/null | cut -d'|' -f2-9 >> "$S"
finish_call
exit 0
