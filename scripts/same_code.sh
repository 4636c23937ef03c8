#!/usr/bin/env bash
# Whether a change of templates/ moves the machine code: compiles each config
# (one line of `mxattn compile` flags a line, '#' lines skipped) with the
# templates of git revision REV and with the working tree's, both by the same
# build's NVRTC (no GPU needed), and compares the cubins' code sections
# (.text.<kernel>, every kernel of the module): identical sections are
# identical SASS.  Prints one line a config and exits 1 if any differs.
#   scripts/same_code.sh BUILD REV CONFIGS
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 3 ]] || { echo "usage: scripts/same_code.sh BUILD REV CONFIGS" >&2; exit 2; }
build=$1 rev=$2 configs=$3
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
mkdir -p "$work/old" && git archive "$rev" templates | tar -x -C "$work/old"
# Name, size and SHA-1 of every code section of an ELF64 cubin.
sections() {
  python3 - "$1" <<'PY'
import hashlib, struct, sys
b = open(sys.argv[1], 'rb').read()
shoff, = struct.unpack_from('<Q', b, 0x28)
size, n, strndx = struct.unpack_from('<HHH', b, 0x3a)
sh = [struct.unpack_from('<IIQQQQIIQQ', b, shoff + i * size) for i in range(n)]
names = sh[strndx][4]
for h in sh:
    name = b[names + h[0]:b.index(b'\0', names + h[0])].decode()
    if name.startswith('.text.'):
        print(name, h[5], hashlib.sha1(b[h[4]:h[4] + h[5]]).hexdigest())
PY
}
status=0 i=0
while read -r flags; do
  [[ -z "$flags" || "$flags" == \#* ]] && continue
  i=$((i + 1))
  for side in old new; do
    dir="$work/old/templates"; [[ $side == new ]] && dir="$PWD/templates"
    # shellcheck disable=SC2086
    MXATTN_TEMPLATE_DIR=$dir "$build/mxattn" compile $flags --cubin "$work/$side.cubin" > /dev/null
    sections "$work/$side.cubin" > "$work/$side.txt"
  done
  if [[ ! -s "$work/old.txt" ]]; then verdict="no code"; status=1
  elif cmp -s "$work/old.txt" "$work/new.txt"; then verdict="same code ($(wc -l < "$work/new.txt") kernels)"
  else verdict="CODE DIFFERS"; status=1; fi
  echo "$i $verdict: $flags"
done < "$configs"
exit $status
