#!/usr/bin/env bash
# Session 16, call 1: the whole GPU suite (scripts/gpu_tests_call.sh) and, first, the SASS of
# int8-fp8's default attention kernels at D=128 and D=64 (cubins compiled on the CPU machine by
# `mxattn compile --cubin` into build-gpu/sass/). timeout_s 420; carry build-gpu.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
for c in "$B"/sass/*.cubin; do
  n=$(basename "$c" .cubin)
  cuobjdump -sass "$c" > "$L/$n.sass" 2>&1
  stamp "sass $n: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$L/$n.sass") lines"
done
bash scripts/gpu_tests_call.sh
