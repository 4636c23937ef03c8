"""Contexts and plans, shared by every caller in the process.

One mxattn context per CUDA device (created on first use) and one plan per
distinct problem, so a repeated call with the same shapes, strides, dtype,
family, causal mode and scale makes no new plan.  Nothing here imports torch.
"""
import atexit
import ctypes
import dataclasses
import json
import threading

from ._native import (Options, PlanInfo, Problem, Strides, check, lib, take_string)


@dataclasses.dataclass(frozen=True)
class ProblemSpec:
    """Everything in an mxattn_problem, as plain hashable values: the plan
    cache's key.  Strides are (batch, head, seq) in elements."""
    device: int
    family: str
    head_dim: int
    batch: int
    heads_q: int
    heads_kv: int
    seq_q: int
    seq_k: int
    causal: int          # CAUSAL_NONE / TOP_LEFT / BOTTOM_RIGHT
    dtype: int           # DTYPE_F16 / DTYPE_BF16, of q, k, v and o
    layout: int          # LAYOUT_BHND / LAYOUT_BNHD
    q_strides: tuple
    k_strides: tuple
    v_strides: tuple
    o_strides: tuple
    sm_scale: float      # 0.0: the library's 1/sqrt(head_dim)
    return_lse: bool
    config: str = ""     # "" lets mxattn choose; else "key=value ..." knobs
    v_terms: int = 1     # int8-fp8: V in one or two E4M3 terms

    def to_struct(self):
        """The mxattn_problem; keep it alive as long as anything uses it
        (it points at its family string)."""
        problem = Problem()
        family = self.family.encode()
        check(lib.mxattn_problem_init(ctypes.byref(problem), family, self.head_dim))
        problem.family = family  # our copy: the struct now holds a reference to it
        problem.batch, problem.heads_q, problem.heads_kv = self.batch, self.heads_q, self.heads_kv
        problem.seq_q, problem.seq_k = self.seq_q, self.seq_k
        problem.causal = self.causal
        problem.dtype = problem.out_dtype = self.dtype
        problem.layout = self.layout
        problem.q_strides = Strides(*self.q_strides)
        problem.k_strides = Strides(*self.k_strides)
        problem.v_strides = Strides(*self.v_strides)
        problem.o_strides = Strides(*self.o_strides)
        problem.sm_scale = self.sm_scale
        problem.return_lse = int(self.return_lse)
        problem.v_terms = self.v_terms
        return problem


class Plan:
    """A compiled plan and the problem struct it was made from."""

    def __init__(self, spec, handle, problem):
        self.spec = spec
        self.handle = handle
        self.problem = problem

    def info(self):
        raw = PlanInfo()
        check(lib.mxattn_plan_get_info(self.handle, ctypes.byref(raw)))
        return {
            "config": raw.config.decode(errors="replace"),
            "kernel_name": raw.kernel_name.decode(errors="replace"),
            "config_source": (raw.config_source or b"").decode(errors="replace"),
            "cubin_from_cache": bool(raw.cubin_from_cache),
            "compile_ms": raw.compile_ms,
            "create_ms": raw.create_ms,
            "registers": raw.registers,
            "shared_bytes": raw.shared_bytes,
            "spill_bytes": raw.spill_bytes,
            "workspace_bytes": raw.workspace_bytes,
        }


_lock = threading.RLock()
_contexts = {}   # device ordinal -> mxattn_ctx * (c_void_p)
_plans = {}      # ProblemSpec -> Plan


def context(device):
    """The shared mxattn context of a CUDA device, created on first use."""
    with _lock:
        ctx = _contexts.get(device)
        if ctx is None:
            opts = Options()
            check(lib.mxattn_options_init(ctypes.byref(opts)))
            opts.device = device
            ctx = ctypes.c_void_p()
            check(lib.mxattn_create(ctypes.byref(ctx), ctypes.byref(opts)))
            _contexts[device] = ctx
        return ctx


_calls = {}      # attention()'s call key -> Plan (see _torch_api._call_key)


def plan_of_call(key):
    """The plan remembered for a call key, or None (also for a key that
    cannot be hashed, such as one holding a tensor as sm_scale)."""
    try:
        return _calls.get(key) if key is not None else None
    except TypeError:
        return None


def remember_call(key, plan):
    try:
        _calls[key] = plan
    except TypeError:
        pass


def cached_plan(spec):
    """The plan for spec if one was made already, else None."""
    return _plans.get(spec)


def plan_for(spec):
    """The plan for spec, made (and compiled, unless cached) on first use."""
    plan = _plans.get(spec)
    if plan is not None:
        return plan
    with _lock:
        plan = _plans.get(spec)
        if plan is None:
            problem = spec.to_struct()
            handle = ctypes.c_void_p()
            config = spec.config.encode() if spec.config else None
            check(lib.mxattn_plan_create(context(spec.device), ctypes.byref(problem),
                                         config, ctypes.byref(handle)))
            plan = _plans[spec] = Plan(spec, handle, problem)
        return plan


def plan_count():
    """How many plans this process holds (the tests use it to see caching)."""
    return len(_plans)


def forget_plans(matches):
    """Destroys the cached plans whose spec satisfies matches(spec)."""
    with _lock:
        doomed = [s for s in _plans if matches(s)]
        if doomed:
            _calls.clear()  # call keys may name a doomed plan; they are rebuilt on use
        for spec in doomed:
            lib.mxattn_plan_destroy(_plans.pop(spec).handle)


def tune(spec):
    """Tunes spec's problem; returns (best config, speed-up over the default)."""
    problem = spec.to_struct()
    best = ctypes.create_string_buffer(1024)
    speedup = ctypes.c_double(0.0)
    check(lib.mxattn_tune(context(spec.device), ctypes.byref(problem), best,
                          ctypes.sizeof(best), ctypes.byref(speedup)))
    # Plans made before tuning hold the old choice; the next call re-plans.
    same_kernel = (spec.device, spec.family, spec.head_dim, spec.causal, spec.dtype)
    forget_plans(lambda s: (s.device, s.family, s.head_dim, s.causal, s.dtype) == same_kernel)
    return best.value.decode(errors="replace"), speedup.value


def candidates(spec, limit):
    """The legal configurations of spec's problem, the heuristic default first
    (mxattn_candidates); at most `limit` of them."""
    problem = spec.to_struct()
    configs = (ctypes.c_void_p * limit)()
    count = ctypes.c_int(0)
    check(lib.mxattn_candidates(context(spec.device), ctypes.byref(problem), configs, limit,
                                ctypes.byref(count)))
    return [take_string(configs[i]) for i in range(min(count.value, limit))]


def query(filter=None, device=0):
    """Tuned configurations in the database, as a list of dicts."""
    raw = ctypes.c_void_p()
    check(lib.mxattn_query(context(device), filter.encode() if filter else None,
                           ctypes.byref(raw)))
    text = take_string(raw)
    return json.loads(text) if text else []


@atexit.register
def _release_all():
    # Plans before their contexts; errors at exit would only hide the real one.
    with _lock:
        try:
            for plan in _plans.values():
                lib.mxattn_plan_destroy(plan.handle)
            for ctx in _contexts.values():
                lib.mxattn_destroy(ctx)
        except Exception:
            pass
        _calls.clear()
        _plans.clear()
        _contexts.clear()
