"""mxattn: run-time generated, autotuned low-bit attention kernels, from Python.

A thin ctypes binding of libmxattn.so (include/mxattn.h); nothing to compile.
The library is found through $MXATTN_LIB (a path to libmxattn.so), else the
repository's build/libmxattn.so, else the system's library search path.

    import mxattn
    o = mxattn.attention(q, k, v, family="int8-f16", causal=True)

Importing needs neither torch nor a GPU; attention(), tune() and plan_info()
import torch when called.
"""
from ._native import MxattnError, MxattnValueError, Status
from ._native import last_error as _last_error
from ._native import lib as _lib
from ._plans import plan_count
from ._plans import query as _query
from ._torch_api import FAMILIES, attention, plan_info, tune

__all__ = ["FAMILIES", "MxattnError", "MxattnValueError", "Status", "attention",
           "last_error", "library_path", "plan_count", "plan_info", "query", "tune",
           "version"]


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
