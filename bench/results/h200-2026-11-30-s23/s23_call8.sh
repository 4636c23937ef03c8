#!/usr/bin/env bash
# Session 23, call 8: the merged ring as int8-fp8's default at 64 < D <= 128 without a mask
# from 16384 keys (the shared ring below).  (1) `ctest -L gpu` on the commit (gpu_int8_wgmma's
# test_ring, the lengths cases and test_long_rows now run the merged ring); (2) issue #7's bench
# with the untuned defaults (7 rounds, 1200 ms a row, clocks).  ~5 min; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
rm -f "$B"/Testing/Temporary/LastTest*.log
timeout 300 ctest --test-dir "$PWD/$B" -L gpu -j8 --timeout 290 --output-on-failure > "$L/ctest_gpu.log" 2>&1
stamp "ctest -L gpu rc=$?"
grep -E "Test +#|tests passed|tests failed" "$L/ctest_gpu.log" >> "$S"
cp "$B"/Testing/Temporary/LastTest*.log "$L/" 2>/dev/null
BENCH_ARGS="--families f16,int8-fp8 --dims 128,64 --seqs 4096,16384 --causal both --baselines sdpa-cudnn --rounds 7 --rep-ms 1200 --clocks" \
  BENCH_TIMEOUT=$((340 - SECONDS)) MXATTN_BUILD=$B OUT=$L/bench7 bash scripts/device.sh --bench > "$L/bench7.log" 2>&1
stamp "bench #7: $(grep '^## bench' "$L/bench7.log")"
grep -E "^\| (f16|int8-fp8|sdpa-cudnn) " "$L/bench7/bench/results.md" 2>/dev/null | cut -d'|' -f2-9,11-13 >> "$S"
cp "$L/bench7/bench/results.md" "$OUT/bench7_results.md" 2>/dev/null
finish_call
exit 0
