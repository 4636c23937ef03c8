#!/usr/bin/env bash
# Session 17, call 9: the session's last build (PTX dumps named by kernel when kernels compile
# apart; no kernel or plan change since call 7) through gpu_tune and gpu_driver (plans, the
# database, modules per kernel) and one plan with MXATTN_DUMP_PTX set. ~2 min; timeout_s 200.
cd "$(dirname "$0")/../../.."
source scripts/call_prelude.sh
stamp start
(cd $B && timeout 150 ctest -L gpu -R "gpu_tune|gpu_driver" -j2 --output-on-failure > "$L/ctest.log" 2>&1); r=$?
stamp "ctest gpu_tune gpu_driver rc=$r: $(grep -E 'tests passed|tests failed' "$L/ctest.log")"
mkdir -p /tmp/dump && MXATTN_DUMP_PTX=/tmp/dump MXATTN_CACHE=/tmp/d.db timeout 60 $B/mxattn run --family int8-fp8 \
  --head-dim 128 --seq 300 --batch 1 --heads 2 --reps 2 > "$L/run.log" 2>&1
stamp "run with dumps rc=$?: $(grep -E '^(plan|error)' "$L/run.log" | tr -s ' ' | tr '\n' ' ') dumps: $(ls /tmp/dump | sed 's/^[0-9a-f]*\.//' | tr '\n' ' ')"
finish_call
exit 0
