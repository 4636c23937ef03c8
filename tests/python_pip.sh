#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment, offline (--no-index: no
# PyPI, and no --no-build-isolation: the in-tree backend needs nothing), then
# the installed package from another folder: its version, its bundled library
# and a few calls that need no GPU.  Also a wheel without the library, which
# must find one installed under a prefix, and an editable install.
#
# ctest runs: bash tests/python_pip.sh <path-to-mxattn-binary>; the wheel
# bundles libmxattn.so from the binary's build folder (MXATTN_BUILD_DIR).
# Needs python3 -m venv (Debian: python3-venv); exit 77 (skipped) without it.
set -euo pipefail

binary=${1:?usage: python_pip.sh <path-to-mxattn-binary>}
if [ -n "${MXATTN_PIP_TEST_SKIP:-}" ]; then
    echo "$MXATTN_PIP_TEST_SKIP: skipped (the plain build runs this test)"
    exit 77
fi
python=${MXATTN_TEST_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
    echo "$python not found: skipped"
    exit 77
fi
if ! "$python" -c "import venv, ensurepip" >/dev/null 2>&1; then
    echo "$python has no venv/ensurepip (Debian: apt-get install python3-venv): skipped"
    exit 77
fi

build_dir=$(cd "$(dirname "$binary")" && pwd)
repo_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ ! -f "$build_dir/libmxattn.so" ]; then
    echo "$build_dir/libmxattn.so not found (build the mxattn_shared target)" >&2
    exit 1
fi
header_version=$(sed -n 's/^#define MXATTN_VERSION "\(.*\)"$/\1/p' "$repo_dir/include/mxattn.h")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree_status() { git -C "$repo_dir" status --porcelain --ignored -- python pyproject.toml 2>/dev/null || true; }
tree_status >"$tmp/tree_before"
unset MXATTN_LIB
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
export PYTHONDONTWRITEBYTECODE=1 MXATTN_CACHE="$tmp/mxattn.db"

"$python" -m venv "$tmp/venv"
venv_python="$tmp/venv/bin/python"
pip() { "$venv_python" -m pip --no-input "$@"; }

echo "== pip install --no-index $repo_dir (bundling $build_dir/libmxattn.so)"
MXATTN_BUILD_DIR="$build_dir" pip install --no-index "$repo_dir"

# Run from elsewhere: the source tree's python/ must not be what is imported.
cd "$tmp"
cat > check_installed.py <<'EOF'
import ctypes, os, sys
sys.modules["torch"] = None   # the package must work without torch
import mxattn
from mxattn import _native

expected_lib, header_version, site = sys.argv[1], sys.argv[2], sys.argv[3]
assert mxattn.__file__.startswith(site), f"imported {mxattn.__file__}, not from {site}"
assert mxattn.__version__ == header_version, (mxattn.__version__, header_version)
assert mxattn.version() == header_version, (mxattn.version(), header_version)
assert os.path.realpath(mxattn.library_path()) == os.path.realpath(expected_lib), \
    f"loaded {mxattn.library_path()}, expected {expected_lib}"

# A CPU-only call through the library: the problem check refuses head_dim 0.
problem = _native.Problem()
_native.check(_native.lib.mxattn_problem_init(ctypes.byref(problem), b"f16", 64))
problem.batch = problem.heads_q = problem.heads_kv = 1
problem.seq_q = problem.seq_k = 16
problem.head_dim = 0
try:
    _native.check(_native.lib.mxattn_problem_check(ctypes.byref(problem)))
    raise SystemExit("head_dim 0 was accepted")
except mxattn.MxattnValueError as e:
    assert "head_dim" in e.message, e.message
# The database through a context (no driver needed): empty, and a bad filter refused.
assert mxattn.query() == [], mxattn.query()
try:
    mxattn.query("no equals sign")
    raise SystemExit("a malformed filter was accepted")
except mxattn.MxattnValueError:
    pass
# Without torch the tensor functions say what they need.
try:
    mxattn.scaled_dot_product_attention(None, None, None)
    raise SystemExit("scaled_dot_product_attention ran without torch")
except ImportError as e:
    assert "PyTorch" in str(e), e
print("ok:", mxattn.__version__, mxattn.library_path())
EOF

site=$("$venv_python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$venv_python" check_installed.py "$site/mxattn/lib/libmxattn.so" "$header_version" "$site"
# $MXATTN_LIB still comes first for an installed package.
MXATTN_LIB="$build_dir/libmxattn.so" "$venv_python" check_installed.py \
    "$build_dir/libmxattn.so" "$header_version" "$site"

echo "== a wheel without the library finds one installed under a prefix"
pip install --no-index --force-reinstall --config-settings bundle=no "$repo_dir"
if [ -e "$site/mxattn/lib" ]; then
    echo "bundle=no still installed $site/mxattn/lib" >&2
    exit 1
fi
# What `cmake --install --prefix` leaves: lib/libmxattn.so.0, found by the
# dynamic loader (here through LD_LIBRARY_PATH), with the libraries it needs.
mkdir -p prefix/lib
cp "$build_dir/libmxattn.so" prefix/lib/libmxattn.so.0
for dep in "$build_dir"/lib*.so.[0-9]*; do
    case $(basename "$dep") in libmxattn.*) ;; *) cp -L "$dep" prefix/lib/ ;; esac
done
LD_LIBRARY_PATH="$tmp/prefix/lib" "$venv_python" check_installed.py \
    "$tmp/prefix/lib/libmxattn.so.0" "$header_version" "$site"
if ldconfig -p 2>/dev/null | grep -q libmxattn; then
    echo "(libmxattn is installed on this system: the no-library case is not checked)"
elif "$venv_python" -c "import sys; sys.modules['torch'] = None; import mxattn; mxattn.version()" \
        >no_lib.out 2>&1; then
    echo "with no library anywhere, mxattn.version() did not fail" >&2
    exit 1
else
    grep -q "could not load libmxattn.so" no_lib.out || { cat no_lib.out >&2; exit 1; }
fi

echo "== pip install --editable: the source tree's package"
pip install --no-index --force-reinstall --editable "$repo_dir"
MXATTN_LIB="$build_dir/libmxattn.so" "$venv_python" check_installed.py \
    "$build_dir/libmxattn.so" "$header_version" "$repo_dir/python"

# Nothing written into the source tree (pip builds in place).
if ! tree_status | diff "$tmp/tree_before" - >&2; then
    echo "the builds left files in the source tree" >&2
    exit 1
fi
echo "python_pip: ok"
