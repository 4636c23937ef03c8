#!/usr/bin/env bash
# The Python binding's CPU tests (python/tests/test_cpu.py) against the built
# library.  ctest runs: bash tests/cli_python.sh <path-to-mxattn-binary>;
# libmxattn.so lies beside the binary.  Exit 77 tells ctest "skipped".
set -euo pipefail

binary=${1:?usage: cli_python.sh <path-to-mxattn-binary>}
if ! command -v python3 >/dev/null 2>&1; then
    echo "python3 not found: skipped"
    exit 77
fi

build_dir=$(cd "$(dirname "$binary")" && pwd)
repo_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export MXATTN_LIB="$build_dir/libmxattn.so"
if [ ! -f "$MXATTN_LIB" ]; then
    echo "$MXATTN_LIB not found (build the mxattn_shared target)" >&2
    exit 1
fi

# -B: no __pycache__ left in the source tree.
exec python3 -B -m unittest discover -s "$repo_dir/python/tests" -p 'test_cpu.py' -v
