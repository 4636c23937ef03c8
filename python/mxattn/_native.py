"""The ctypes layer: finds libmxattn.so, mirrors the C structs of
include/mxattn.h and turns status codes into exceptions.

Nothing here imports torch, so it works on machines without a GPU.
"""
import ctypes
import ctypes.util
import enum
import os
import sys
import threading

# --- status codes -----------------------------------------------------------
# Mirrors the mxattn_status enum; C enums are ints counted from 0.


class Status(enum.IntEnum):
    OK = 0
    ERROR_INVALID_VALUE = 1
    ERROR_NULL_POINTER = 2
    ERROR_MISALIGNED = 3
    ERROR_UNSUPPORTED = 4
    ERROR_NO_DRIVER = 5
    ERROR_NO_DEVICE = 6
    ERROR_NO_COMPILER = 7
    ERROR_COMPILE = 8
    ERROR_TEMPLATE = 9
    ERROR_CUDA = 10
    ERROR_OUT_OF_MEMORY = 11
    ERROR_OUT_OF_RESOURCES = 12
    ERROR_CACHE = 13
    ERROR_CACHE_CORRUPT = 14
    ERROR_IO = 15
    ERROR_NOT_FOUND = 16
    ERROR_WRONG_RESULT = 17
    ERROR_INTERNAL = 18
    ERROR_CACHE_READ_ONLY = 19
    ERROR_CACHE_FULL = 20
    ERROR_CACHE_BUSY = 21
    ERROR_CACHE_FOREIGN = 22
    ERROR_UNTRUSTED = 23


# Other enums of the header, as the ints C sees.
DTYPE_F16, DTYPE_BF16 = 0, 1
LAYOUT_BHND, LAYOUT_BNHD = 0, 1
CAUSAL_NONE, CAUSAL_TOP_LEFT, CAUSAL_BOTTOM_RIGHT = 0, 1, 2


class MxattnError(RuntimeError):
    """A call into libmxattn returned a status other than MXATTN_OK.

    status is the int code, status_name its mxattn_status_string() and
    message the library's mxattn_last_error() text at the time of failure.
    """

    def __init__(self, status, status_name, message):
        self.status = int(status)
        self.status_name = status_name
        self.message = message
        text = f"mxattn: {status_name}"
        super().__init__(f"{text}: {message}" if message else text)


class MxattnValueError(MxattnError, ValueError):
    """A bad argument (invalid value, null pointer, misaligned pointer or
    stride).  Also a ValueError, so callers may catch either."""


_VALUE_STATUSES = (Status.ERROR_INVALID_VALUE, Status.ERROR_NULL_POINTER,
                   Status.ERROR_MISALIGNED)


# --- structs ------------------------------------------------------------------
# Field by field as in include/mxattn.h; python/tests/test_cpu.py compares
# every offset and size with a C compiler's.


class Strides(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("head", ctypes.c_int64),
                ("seq", ctypes.c_int64)]


class Problem(ctypes.Structure):
    _fields_ = [
        ("family", ctypes.c_char_p),
        ("head_dim", ctypes.c_int),
        ("batch", ctypes.c_int),
        ("heads_q", ctypes.c_int),
        ("heads_kv", ctypes.c_int),
        ("seq_q", ctypes.c_int),
        ("seq_k", ctypes.c_int),
        ("causal", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("out_dtype", ctypes.c_int),
        ("layout", ctypes.c_int),
        ("q_strides", Strides),
        ("k_strides", Strides),
        ("v_strides", Strides),
        ("o_strides", Strides),
        ("sm_scale", ctypes.c_float),
        ("return_lse", ctypes.c_int),
        ("direct_p", ctypes.c_int),
        ("smooth_k", ctypes.c_int),
        ("v_terms", ctypes.c_int),
    ]


class Options(ctypes.Structure):
    _fields_ = [
        ("db_path", ctypes.c_char_p),
        ("tune_policy", ctypes.c_char_p),
        ("device", ctypes.c_int),
        ("no_cache", ctypes.c_int),
    ]


class PlanInfo(ctypes.Structure):
    _fields_ = [
        ("config", ctypes.c_char * 256),
        ("kernel_name", ctypes.c_char * 128),
        ("config_source", ctypes.c_char_p),
        ("cubin_from_cache", ctypes.c_int),
        ("compile_ms", ctypes.c_double),
        ("create_ms", ctypes.c_double),
        ("registers", ctypes.c_int),
        ("shared_bytes", ctypes.c_int),
        ("spill_bytes", ctypes.c_int),
        ("workspace_bytes", ctypes.c_size_t),
        ("cubin_stored", ctypes.c_int),
        ("note", ctypes.c_char * 512),
        ("key_block", ctypes.c_int),
    ]


class Param(ctypes.Structure):
    """mxattn_param: one kernel parameter of the templates' parameter space."""
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("role", ctypes.c_char_p),
        ("legal", ctypes.c_char_p),
        ("default_value", ctypes.c_char_p),
        ("families", ctypes.c_char_p),
        ("help", ctypes.c_char_p),
        ("is_bool", ctypes.c_int),
        ("is_range", ctypes.c_int),
        ("min", ctypes.c_long),
        ("max", ctypes.c_long),
    ]


# --- function prototypes ------------------------------------------------------
# Handles (mxattn_ctx *, mxattn_plan *) and device pointers travel as void *.
_c = ctypes
_STATUS = _c.c_int
_PROTOTYPES = {
    "mxattn_version": (_c.c_char_p, []),
    "mxattn_status_string": (_c.c_char_p, [_c.c_int]),
    "mxattn_last_error": (_c.c_char_p, []),
    "mxattn_options_init": (_STATUS, [_c.POINTER(Options)]),
    "mxattn_create": (_STATUS, [_c.POINTER(_c.c_void_p), _c.POINTER(Options)]),
    "mxattn_destroy": (None, [_c.c_void_p]),
    "mxattn_problem_init": (_STATUS, [_c.POINTER(Problem), _c.c_char_p, _c.c_int]),
    "mxattn_problem_check": (_STATUS, [_c.POINTER(Problem)]),
    "mxattn_plan_create": (_STATUS, [_c.c_void_p, _c.POINTER(Problem), _c.c_char_p,
                                     _c.POINTER(_c.c_void_p)]),
    "mxattn_plan_get_info": (_STATUS, [_c.c_void_p, _c.POINTER(PlanInfo)]),
    "mxattn_plan_destroy": (None, [_c.c_void_p]),
    "mxattn_run": (_STATUS, [_c.c_void_p, _c.c_void_p, _c.c_void_p, _c.c_void_p,
                             _c.c_void_p, _c.c_void_p, _c.c_void_p]),
    # char **configs is taken as void ** so that each string can be handed
    # back to mxattn_free (a c_char_p result would be copied and lost).
    "mxattn_candidates": (_STATUS, [_c.c_void_p, _c.POINTER(Problem),
                                    _c.POINTER(_c.c_void_p), _c.c_int,
                                    _c.POINTER(_c.c_int)]),
    "mxattn_tune": (_STATUS, [_c.c_void_p, _c.POINTER(Problem), _c.c_char_p,
                              _c.c_size_t, _c.POINTER(_c.c_double)]),
    "mxattn_query": (_STATUS, [_c.c_void_p, _c.c_char_p, _c.POINTER(_c.c_void_p)]),
    "mxattn_free": (None, [_c.c_void_p]),
    "mxattn_families": (_STATUS, [_c.POINTER(_c.POINTER(_c.c_char_p)), _c.POINTER(_c.c_int)]),
    "mxattn_params": (_STATUS, [_c.POINTER(_c.POINTER(Param)), _c.POINTER(_c.c_int)]),
}


# --- finding and loading the library -------------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# Where a wheel puts the library (python/build_backend/mxattn_build.py), with
# the liblua and libsqlite copies it needs beside it (its RPATH is $ORIGIN).
BUNDLED_LIB = os.path.join(_PACKAGE_DIR, "lib", "libmxattn.so")
# The package run from the source tree: python/mxattn/../../build.
_REPO_BUILD_LIB = os.path.normpath(os.path.join(_PACKAGE_DIR, "..", "..", "build",
                                                "libmxattn.so"))
# `cmake --install` names the library by its SONAME under <prefix>/lib.
_SONAME = "libmxattn.so.0"


def library_candidates(system=True):
    """Where the library is looked for, in order: $MXATTN_LIB; the copy
    bundled in the installed package; the repository's build folder (the
    package used from the source tree); the Python prefix's lib folder (a
    `cmake --install --prefix` into a virtual environment); then the system's:
    ctypes.util.find_library and the dynamic loader's own search for
    libmxattn.so.0 (LD_LIBRARY_PATH, ld.so.cache: a prefix such as /usr/local).
    system=False leaves out the system's, whose find_library runs ldconfig."""
    candidates = []
    if os.environ.get("MXATTN_LIB"):
        candidates.append(os.environ["MXATTN_LIB"])
    candidates += [BUNDLED_LIB, _REPO_BUILD_LIB, os.path.join(sys.prefix, "lib", _SONAME)]
    if system:
        found = ctypes.util.find_library("mxattn")
        if found:
            candidates.append(found)
        candidates.append(_SONAME)
    return list(dict.fromkeys(candidates))  # in order, each once


def source_tree_version():
    """MXATTN_VERSION of include/mxattn.h beside the package (the source
    tree), else "unknown"; an installed package has _version.py instead."""
    header = os.path.join(_PACKAGE_DIR, "..", "..", "include", "mxattn.h")
    try:
        with open(header) as f:
            for line in f:
                words = line.split()
                if words[:2] == ["#define", "MXATTN_VERSION"] and len(words) == 3:
                    return words[2].strip('"')
    except OSError:
        pass
    return "unknown"


def _loaded_file(name):
    """The file the dynamic loader opened for name: name itself if it is a
    path, else the mapping of that file name in /proc/self/maps (the loader
    searched LD_LIBRARY_PATH and its cache), else name."""
    if os.path.sep in name:
        return name
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path) == name:
                    return path
    except OSError:
        pass
    return name


class _Library:
    """The loaded libmxattn.so with prototypes set.  Loaded on first use so
    that `import mxattn` works even where the library has not been built.

    Functions are bound one by one on first call: while the C API is still
    being written, a missing symbol then fails only the calls that need it.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._cdll = None
        self.path = None

    def _load(self):
        with self._lock:
            if self._cdll is not None:
                return self._cdll
            explicit = os.environ.get("MXATTN_LIB")
            if explicit and not os.path.exists(explicit):
                raise OSError(f"MXATTN_LIB={explicit} does not exist")
            # A $MXATTN_LIB that fails to load must not fall back to another copy.
            errors = []
            if explicit:
                searches = [[explicit]]
            else:
                # The system's search comes last and only if needed: it spawns ldconfig.
                local = library_candidates(system=False)
                searches = [local, lambda: [c for c in library_candidates() if c not in local]]
            for search in searches:
                for path in (search() if callable(search) else search):
                    if os.path.sep in path and not os.path.exists(path):
                        errors.append(f"{path}: not found")
                        continue
                    try:
                        self._cdll = ctypes.CDLL(path)
                        self.path = _loaded_file(path)
                        return self._cdll
                    except OSError as e:
                        errors.append(f"{path}: {e}")
            raise OSError("could not load libmxattn.so (pip install the package, build it, "
                          "or set MXATTN_LIB to its path); tried: "
                          + "; ".join(errors))

    def __getattr__(self, name):
        if name not in _PROTOTYPES:
            raise AttributeError(name)
        cdll = self._load()
        try:
            fn = getattr(cdll, name)
        except AttributeError:
            raise NotImplementedError(f"{self.path} does not export {name}") from None
        fn.restype, fn.argtypes = _PROTOTYPES[name]
        setattr(self, name, fn)  # later lookups skip __getattr__
        return fn


lib = _Library()


def _text(raw):
    return raw.decode("utf-8", "replace") if raw else ""


def status_name(status):
    return _text(lib.mxattn_status_string(int(status)))


def last_error():
    """The library's message for the last failure on this thread ("" if none)."""
    return _text(lib.mxattn_last_error())


def error_for(status, message=None):
    """The exception for a non-OK status (message defaults to last_error())."""
    if message is None:
        message = last_error()
    cls = MxattnValueError if status in _VALUE_STATUSES else MxattnError
    return cls(status, status_name(status), message)


def check(status):
    """Raises the matching MxattnError unless status is MXATTN_OK."""
    if status != Status.OK:
        raise error_for(status)


def take_string(pointer):
    """Copies a library-allocated C string into Python and frees it."""
    if not pointer:
        return ""
    try:
        return _text(ctypes.string_at(pointer))
    finally:
        lib.mxattn_free(pointer)


def families():
    """The kernel families, as the library's templates declare them
    (mxattn_families): a tuple of names, "f16" first."""
    names, count = ctypes.POINTER(ctypes.c_char_p)(), ctypes.c_int()
    check(lib.mxattn_families(ctypes.byref(names), ctypes.byref(count)))
    return tuple(_text(names[i]) for i in range(count.value))


def params():
    """Every kernel parameter of the templates' parameter space
    (mxattn_params): a tuple of dicts with name, role ("shape", "problem" or
    "knob"), legal ("16|32|64" or "8..256"), default ("" if none), families
    (the families that read it, () for all), help, and for a range min/max."""
    table, count = ctypes.POINTER(Param)(), ctypes.c_int()
    check(lib.mxattn_params(ctypes.byref(table), ctypes.byref(count)))
    out = []
    for i in range(count.value):
        p = table[i]
        entry = {"name": _text(p.name), "role": _text(p.role), "legal": _text(p.legal),
                 "default": _text(p.default_value), "families": tuple(_text(p.families).split()),
                 "help": _text(p.help)}
        if p.is_range:
            entry["min"], entry["max"] = p.min, p.max
        out.append(entry)
    return tuple(out)
