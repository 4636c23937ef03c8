#!/usr/bin/env bash
# A device call for the whole GPU suite (`ctest -L gpu`, eight processes side by side: ~5 min,
# the longest gpu_int8_wgmma's two halves; timeout_s 420, ctest stops by 380 s), each log kept.
# Optionally first the probe of bench/micro/mufu_tensor.cu when built into $B/micro (nvcc here:
# see its header). Prepare: scripts/prepare_gpu_build.sh; carry build-gpu.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
if [[ -x $B/micro/mufu_tensor ]]; then
  $B/micro/mufu_tensor > "$L/mufu_tensor.txt" 2>&1
  stamp "mufu_tensor rc=$?"
  cat "$L/mufu_tensor.txt" >> "$S"
fi
rm -f "$B"/Testing/Temporary/LastTest*.log   # a carried one (from build-dev) is not this run's
timeout 380 ctest --test-dir "$PWD/$B" -L gpu -j8 --timeout 370 --output-on-failure > "$L/ctest_gpu.log" 2>&1
stamp "ctest -L gpu rc=$?"
grep -E "Test +#|tests passed|tests failed" "$L/ctest_gpu.log" >> "$S"
cp "$B"/Testing/Temporary/LastTest*.log "$L/" 2>/dev/null   # every test's output, if ctest wrote it there (session 15 found only the carried one)
finish_call
exit 0
