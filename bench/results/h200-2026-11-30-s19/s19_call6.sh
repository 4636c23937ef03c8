#!/usr/bin/env bash
# Session 19, call 6: compute-sanitizer memcheck, racecheck and synccheck of the FP4 emulation's
# new default (32-key tiles) where ptxas spills a little (nvfp4 D=64, mxfp4 D=64, nvfp4-int8qk
# D=80) and at D=128, ragged lengths, GQA, causal.  ~1 min; timeout_s 200; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
sanitize_each "" <<'LINES'
block_n=32|--family nvfp4 --head-dim 64 --seq-q 100 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
block_n=32|--family mxfp4 --head-dim 64 --seq-q 130 --seq-k 257 --batch 2 --heads 2 --kv-heads 1
block_n=32|--family nvfp4-int8qk --head-dim 80 --seq-q 77 --seq-k 200 --batch 1 --heads 2 --kv-heads 2 --causal top-left
block_n=32|--family nvfp4 --head-dim 128 --seq-q 200 --seq-k 161 --batch 1 --heads 2 --kv-heads 1
LINES
finish_call
exit 0
