#!/usr/bin/env bash
# The Python binding's tests against the built library.  ctest runs:
#   bash tests/cli_python.sh <path-to-mxattn-binary>        python/tests/test_cpu.py
#   bash tests/cli_python.sh <path-to-mxattn-binary> gpu    python/tests/test_gpu.py
# libmxattn.so lies beside the binary.  Exit 77 tells ctest "skipped" (no
# python3; for gpu, no torch or no CUDA GPU).
set -euo pipefail

binary=${1:?usage: cli_python.sh <path-to-mxattn-binary> [cpu|gpu]}
suite=${2:-cpu}
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

case $suite in
    cpu) ;;
    gpu)
        if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" \
                >/dev/null 2>&1; then
            echo "no torch with a CUDA GPU: skipped"
            exit 77
        fi ;;
    *) echo "unknown suite '$suite': cpu or gpu" >&2; exit 2 ;;
esac

# -B: no __pycache__ left in the source tree.
exec python3 -B -m unittest discover -s "$repo_dir/python/tests" -p "test_$suite.py" -v
