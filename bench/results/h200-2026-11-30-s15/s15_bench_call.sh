#!/usr/bin/env bash
# Session 15's bench call (docs/status-2026-11-30-s15.md): the tune of issue #7's shapes, then the
# bench with eleven rounds sharing 1.5 s of timing a row (--rep-ms 1500, fifteen times the
# default's), to tell apart the 1-2% at which f16 meets cuDNN at N=4096 (session 14 read D=128
# N=4096 at 0.948, 0.996 and 1.016 in three runs of the same code). ~5 min; timeout_s 520.
cd "$(dirname "$0")/.."
source scripts/call_prelude.sh
stamp start
tune_and_bench 250 480 11 1500
finish_call
exit 0
