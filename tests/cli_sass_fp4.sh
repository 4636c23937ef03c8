#!/usr/bin/env bash
# The native Blackwell form of the FP4 families, read in its machine code:
# `mxattn compile --arch sm_120a --cubin` of nvfp4, mxfp4 and nvfp4-int8qk, then
# cuobjdump's SASS must hold the block-scaled FP4 MMA (OMMA, the opcode sm_120
# gives mma.sync.kind::mxf4nvf4 / kind::mxf4 ... block_scale), while the
# sm_90a emulation holds none and runs on warpgroup MMAs (HGMMA).  The PTX
# check (tests/test_templates_fp4.c) proves what NVRTC was asked for; this one,
# what ptxas made of it.  Skips (77) where the toolkit has no cuobjdump (the
# CPU machine's CUDA packages leave it out; the GPU machine has it).
source "$(dirname "$0")/support/cli_prologue.sh"
OBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || true)
if [ -z "$OBJDUMP" ]; then
  echo "SKIP: no cuobjdump on this machine"
  exit 77
fi
# The SASS of `family` at head dim d for arch, in $T/arch.sass; 1 (and a FAIL
# line) when it does not compile.
sass() {
  if ! "$MX" compile --family "$1" --head-dim "$2" --arch "$3" --cubin "$T/$3.cubin" > "$T/out" 2>&1; then
    echo "FAIL: $1 D=$2 $3 does not compile: $(cat "$T/out")"; fails=$((fails + 1)); return 1
  fi
  "$OBJDUMP" -sass "$T/$3.cubin" > "$T/$3.sass" 2>&1
}
for family in nvfp4 mxfp4 nvfp4-int8qk; do
  for d in 64 128; do
    sass $family $d sm_120a || continue
    omma=$(grep -c "OMMA" "$T/sm_120a.sass")
    if [ "$omma" -eq 0 ]; then
      echo "FAIL: $family D=$d sm_120a: no OMMA in its SASS ($(grep -cE 'HMMA|QMMA|IMMA' "$T/sm_120a.sass") other MMAs)"
      fails=$((fails + 1))
    else
      echo "ok   $family D=$d sm_120a: $omma OMMA, e.g. $(grep -m1 -o 'OMMA[^ ;]*' "$T/sm_120a.sass")"
    fi
    sass $family $d sm_90a || continue
    if grep -q "OMMA" "$T/sm_90a.sass" || ! grep -q "HGMMA" "$T/sm_90a.sass"; then
      echo "FAIL: $family D=$d sm_90a: OMMA $(grep -c OMMA "$T/sm_90a.sass"), HGMMA $(grep -c HGMMA "$T/sm_90a.sass")"
      fails=$((fails + 1))
    else
      echo "ok   $family D=$d sm_90a: $(grep -c HGMMA "$T/sm_90a.sass") HGMMA, no OMMA"
    fi
  done
done
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
