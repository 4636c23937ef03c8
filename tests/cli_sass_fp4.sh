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
for family in nvfp4 mxfp4 nvfp4-int8qk; do
  for d in 64 128; do
    if ! "$MX" compile --family $family --head-dim $d --arch sm_120a --cubin "$T/native.cubin" > "$T/out" 2>&1; then
      echo "FAIL: $family D=$d sm_120a does not compile: $(cat "$T/out")"; fails=$((fails + 1)); continue
    fi
    "$OBJDUMP" -sass "$T/native.cubin" > "$T/native.sass" 2>&1
    omma=$(grep -c "OMMA" "$T/native.sass")
    if [ "$omma" -eq 0 ]; then
      echo "FAIL: $family D=$d sm_120a: no OMMA in its SASS ($(grep -cE 'HMMA|QMMA|IMMA' "$T/native.sass") other MMAs)"
      fails=$((fails + 1))
    else
      echo "ok   $family D=$d sm_120a: $omma OMMA, e.g. $(grep -m1 -o 'OMMA[^ ;]*' "$T/native.sass")"
    fi
    "$MX" compile --family $family --head-dim $d --arch sm_90a --cubin "$T/emul.cubin" > "$T/out" 2>&1 ||
      { echo "FAIL: $family D=$d sm_90a does not compile"; fails=$((fails + 1)); continue; }
    "$OBJDUMP" -sass "$T/emul.cubin" > "$T/emul.sass" 2>&1
    if grep -q "OMMA" "$T/emul.sass" || ! grep -q "HGMMA" "$T/emul.sass"; then
      echo "FAIL: $family D=$d sm_90a: OMMA $(grep -c OMMA "$T/emul.sass"), HGMMA $(grep -c HGMMA "$T/emul.sass")"
      fails=$((fails + 1))
    else
      echo "ok   $family D=$d sm_90a: $(grep -c HGMMA "$T/emul.sass") HGMMA, no OMMA"
    fi
  done
done
[ "$fails" -eq 0 ] || { echo "$fails failures"; exit 1; }
