"""mxattn: run-time generated, autotuned low-bit attention kernels, from Python.

A thin ctypes binding of libmxattn.so (include/mxattn.h); nothing to compile.
The library is found through $MXATTN_LIB (a path to libmxattn.so), else the
copy installed inside the package (pip install .), else the repository's
build/libmxattn.so, else an installed libmxattn.so.0 (see library_path()).

    import mxattn
    o = mxattn.scaled_dot_product_attention(q, k, v, is_causal=True, family="int8-fp8")
    mxattn.patch_sdpa(family="f16")   # torch.nn.functional's SDPA, served by mxattn
    o, lse = mxattn.attention(q, k, v, family="int8-f16", causal=True, return_lse=True)

Importing needs neither torch nor a GPU.  Where torch is installed, importing
mxattn imports it and registers the mxattn::sdpa op (for torch.compile).
"""
from ._native import MxattnError, MxattnValueError, Status
from ._native import last_error as _last_error
from ._native import lib as _lib
from ._plans import plan_count
from ._plans import query as _query
from ._sdpa import (SdpaPatch, patch_sdpa, register_op, scaled_dot_product_attention,
                    unpatch_sdpa, unsupported_reason)
from ._native import families, params
from ._torch_api import attention, candidates, plan_info, tune

try:
    from ._version import __version__  # written into the wheel by the build backend
except ImportError:  # the source tree: the header is the one source of the version
    from ._native import source_tree_version as _source_tree_version
    __version__ = _source_tree_version()

__all__ = ["MxattnError", "MxattnValueError", "SdpaPatch", "Status", "__version__",
           "attention", "candidates", "families", "last_error", "library_path", "params", "patch_sdpa", "plan_count", "plan_info",
           "query", "register_op", "scaled_dot_product_attention", "tune", "unpatch_sdpa",
           "unsupported_reason", "version"]


def _register_with_torch():
    # The op must exist before torch.compile traces a first call: registering
    # it from inside a trace would break the graph.  Without torch, nothing to do;
    # a failure is kept and raised where the op is needed, not at import.
    try:
        import torch  # noqa: F401
    except Exception:
        return
    try:
        register_op()
    except Exception:
        pass


_register_with_torch()


def version():
    """The library's version string (MXATTN_VERSION of the header it was built from)."""
    return _lib.mxattn_version().decode()


def last_error():
    """The library's message for the last failure on the calling thread ("" if none)."""
    return _last_error()


def query(filter=None, device=0):
    """Tuned configurations in the database, as a list of dicts.

    filter is None or "key=value ..." over gpu, family, head_dim, dtype, causal.
    device picks whose context (and so whose default database) answers."""
    return _query(filter, device)


def library_path():
    """The path of the loaded libmxattn.so (loading it if needed)."""
    _lib.mxattn_version  # binding a function loads the library
    return _lib.path


def __getattr__(name):
    # mxattn.FAMILIES, as before, but read from the library (mxattn_families)
    # on first use rather than kept here: `import mxattn` still works where
    # the library has not been built.
    if name == "FAMILIES":
        return families()
    raise AttributeError(f"module 'mxattn' has no attribute {name!r}")
