#!/usr/bin/env bash
# Session 18, call 3: the session's last build.
#  1. ctest -L gpu (every GPU test; gpu_int8's new tiny-K/tiny-Q quant cases, gpu_int8_wgmma's
#     LSE rule, the design-relative fp64 bounds);
#  2. gpu_int8 test_quantizers_bit_exact under compute-sanitizer memcheck (codes_slowly);
#  3. memcheck, racecheck, synccheck of an int8-fp8 and an int8-f16 plan (the new quant kernels).
# ~5 min; timeout_s 500; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 260 ctest -L gpu -j8 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest -L gpu rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log") $(grep -E '^\s+[0-9]+ - ' "$L/ctest.log" | tr -s ' ' | tr '\n' ' ')"
grep -E "^FAIL" "$L/ctest.log" | cut -c1-300 >> "$S"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/tests/gpu_int8 test_quantizers_bit_exact > "$L/memcheck_quant.log" 2>&1
stamp "memcheck gpu_int8 test_quantizers_bit_exact rc=$?: $(grep -E 'ERROR SUMMARY|mismatch|PASSED|FAILED' "$L/memcheck_quant.log" | sort | uniq -c | tr -s ' ' | tr '\n' ' ')"
sanitize_each "variant=wgmma" <<'LINES'
fuse_q=1 block_m=64 warps=4 block_n=128 stages=2 rowsum_mma=1|--family int8-fp8 --head-dim 72 --seq-q 200 --seq-k 333 --batch 1 --heads 4 --kv-heads 2 --causal bottom-right
block_m=64 warps=4 block_n=64 stages=2|--family int8-fp8 --head-dim 256 --seq-q 130 --seq-k 300 --batch 1 --heads 2 --kv-heads 1
LINES
sanitize_each "" <<'LINES'
block_m=64 warps=4 block_n=64 stages=2|--family int8-f16 --head-dim 128 --seq-q 200 --seq-k 333 --batch 2 --heads 2 --kv-heads 1 --causal top-left
LINES
finish_call
exit 0
