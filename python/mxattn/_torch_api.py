"""attention(), tune() and plan_info() on PyTorch tensors.

torch is imported inside the functions, so `import mxattn` works without it.
"""
from . import _plans
from ._native import (CAUSAL_BOTTOM_RIGHT, CAUSAL_NONE, CAUSAL_TOP_LEFT, DTYPE_BF16,
                      DTYPE_F16, LAYOUT_BHND, LAYOUT_BNHD, MxattnError, Status, check, lib,
                      status_name)

_LAYOUTS = {"HND": LAYOUT_BHND, "NHD": LAYOUT_BNHD}
# Where each layout keeps (batch, head, seq) among a tensor's four dims.
_DIM_ORDER = {"HND": (0, 1, 2), "NHD": (0, 2, 1)}
_CAUSAL_ALIGNMENTS = {"top-left": CAUSAL_TOP_LEFT, "bottom-right": CAUSAL_BOTTOM_RIGHT}


def _torch():
    import torch
    return torch


def _dtype_code(torch, dtype):
    codes = {torch.float16: DTYPE_F16, torch.bfloat16: DTYPE_BF16}
    if dtype not in codes:
        raise ValueError(f"mxattn: q, k, v must be float16 or bfloat16, not {dtype}")
    return codes[dtype]


def _check_tensors(torch, q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"mxattn: {name} must be a torch.Tensor")
        if t.dim() != 4:
            raise ValueError(f"mxattn: {name} must have 4 dims, has shape {tuple(t.shape)}")
        if not t.is_cuda:
            raise ValueError(f"mxattn: {name} must be on a CUDA device, is on {t.device}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"mxattn: q, k, v are on different devices "
                         f"({q.device}, {k.device}, {v.device})")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"mxattn: q, k, v differ in dtype ({q.dtype}, {k.dtype}, {v.dtype})")
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        # Returning a tensor without grad_fn would silently drop gradients.
        raise ValueError("mxattn.attention has no backward pass; call it under "
                         "torch.no_grad() or torch.inference_mode()")


def _usable(t):
    """t itself if the kernel can read it (unit stride in the last dim, no
    broadcast dims), else a contiguous copy."""
    broadcast = any(stride == 0 and size > 1 for size, stride in zip(t.shape, t.stride()))
    if t.stride(-1) != 1 or broadcast:
        return t.contiguous()
    return t


def _contiguous_strides(shape):
    strides = [1] * 4
    for i in (2, 1, 0):
        strides[i] = strides[i + 1] * shape[i + 1]
    return strides


def _strides(t, layout):
    """(batch, head, seq) strides in elements.  A dim of size 1 is never
    stepped along, and torch may give it any stride, so it gets the stride a
    contiguous tensor would have: always legal for the library."""
    dense = _contiguous_strides(t.shape)
    return tuple(t.stride(i) if t.shape[i] > 1 else dense[i] for i in _DIM_ORDER[layout])


def _output_strides(shape, layout):
    """Strides of the output, which torch.empty(q.shape) makes contiguous."""
    dense = _contiguous_strides(shape)
    return tuple(dense[i] for i in _DIM_ORDER[layout])


def _spec(torch, q, k, v, family, causal, sm_scale, layout, return_lse, causal_alignment,
          config=None, v_terms=1):
    """The ProblemSpec of a call; also checks the arguments."""
    if config is not None and not isinstance(config, str):
        raise TypeError("mxattn: config must be None or a 'key=value ...' string")
    if layout not in _LAYOUTS:
        raise ValueError(f"mxattn: layout must be 'HND' or 'NHD', not {layout!r}")
    if causal_alignment not in _CAUSAL_ALIGNMENTS:
        raise ValueError("mxattn: causal_alignment must be 'top-left' or 'bottom-right', "
                         f"not {causal_alignment!r}")
    if not isinstance(family, str):
        raise TypeError("mxattn: family must be a string")
    b_dim, h_dim, n_dim = _DIM_ORDER[layout]
    batch, heads_q, seq_q, head_dim = q.shape[b_dim], q.shape[h_dim], q.shape[n_dim], q.shape[3]
    heads_kv, seq_k = k.shape[h_dim], k.shape[n_dim]
    if k.shape != v.shape:
        raise ValueError(f"mxattn: k and v differ in shape ({tuple(k.shape)}, {tuple(v.shape)})")
    if k.shape[b_dim] != batch or k.shape[3] != head_dim:
        raise ValueError(f"mxattn: q {tuple(q.shape)} and k {tuple(k.shape)} differ in "
                         f"batch or head dim (layout {layout})")
    return _plans.ProblemSpec(
        device=q.device.index,
        family=family, head_dim=head_dim, batch=batch, heads_q=heads_q, heads_kv=heads_kv,
        seq_q=seq_q, seq_k=seq_k,
        causal=_CAUSAL_ALIGNMENTS[causal_alignment] if causal else CAUSAL_NONE,
        dtype=_dtype_code(torch, q.dtype), layout=_LAYOUTS[layout],
        q_strides=_strides(q, layout), k_strides=_strides(k, layout),
        v_strides=_strides(v, layout), o_strides=_output_strides(q.shape, layout),
        sm_scale=float(sm_scale) if sm_scale is not None else 0.0,
        return_lse=bool(return_lse), config=config or "", v_terms=int(v_terms))


def _checked_spec(torch, q, k, v, *options):
    """Checks the tensors and options; returns the ProblemSpec and the
    tensors the kernel will read (copies where the originals cannot be)."""
    _check_tensors(torch, q, k, v)
    usable = _usable(q), _usable(k), _usable(v)
    return _spec(torch, *usable, *options), usable


def _plan(torch, spec):
    """The plan for spec; refuses to make one while a CUDA graph is captured,
    since plan creation compiles, allocates and synchronizes."""
    plan = _plans.cached_plan(spec)
    if plan is not None:
        return plan
    if torch.cuda.is_current_stream_capturing():
        raise MxattnError(Status.ERROR_UNSUPPORTED, status_name(Status.ERROR_UNSUPPORTED),
                          "no plan exists for this problem and one cannot be made during "
                          "CUDA graph capture; call mxattn.attention once with the same "
                          "shapes, strides, dtype and options before capturing")
    with torch.cuda.device(spec.device):
        return _plans.plan_for(spec)


def attention(q, k, v, *, family="f16", causal=False, sm_scale=None, layout="HND",
              return_lse=False, causal_alignment="top-left", config=None, v_terms=1):
    """Scaled dot-product attention, softmax(q kᵀ · sm_scale) v, on CUDA tensors.

    q is [B, Hq, Nq, D] for layout "HND" or [B, Nq, Hq, D] for "NHD"; k and v
    have Hkv heads and Nk keys, where Hq is a multiple of Hkv (grouped-query
    attention: query head h reads key/value head h // (Hq // Hkv)).  Inputs
    are float16 or bfloat16, all one dtype, on one device; any strides where
    the last dim is contiguous are read in place (others are copied first).

    family: one of mxattn.families() ("f16", "int8-fp8", ...); quantized
        families quantize inside the call.
    causal: mask future keys.  causal_alignment "top-left" is PyTorch SDPA's
        is_causal (query i sees keys j <= i); "bottom-right" is
        FlashAttention's (j <= i + Nk - Nq).  A query that sees no key gets
        zeros and an LSE of -inf.
    sm_scale: None for 1/sqrt(D).
    return_lse: also return the natural-log log-sum-exp, float32 [B, Hq, Nq].
    config: None lets mxattn choose (the tuned entry in its database, else
        its default); a "key=value ..." string (see `mxattn params`) pins
        kernel knobs, e.g. "variant=mma"; knobs left out take defaults.
    v_terms: int8-fp8 only: 2 quantizes V as two E4M3 terms (the second holds
        the first's rounding error), which removes V's share of the error
        (rel-L1 ~0.038 -> ~0.028 at D=128) for ~20% of the speed.

    Returns o (same shape, layout and dtype as q, newly allocated), or
    (o, lse).  Runs asynchronously on PyTorch's current stream of q's device.
    There is no backward pass: call it under torch.no_grad() or
    torch.inference_mode() when inputs require grad.

    The first call for a problem (shapes, strides, dtype, family, causal,
    scale, return_lse) makes a plan, which may compile a kernel; later calls
    reuse it.  Plans are shared process-wide and each owns its workspace (a
    quantized family's operands, the f16 persistent kernel's unit counters and split partials),
    so do not run one problem concurrently on two streams.

    CUDA graphs: once a plan exists, a call only allocates the output through
    PyTorch and launches kernels on the current stream (no allocation by the
    library, no synchronization), so it can be captured.  Call it once with
    the same problem before capturing; making a plan during capture raises
    MxattnError (status MXATTN_ERROR_UNSUPPORTED).

    Errors from the library raise MxattnError (MxattnValueError, also a
    ValueError, for invalid values, null pointers and misaligned pointers).
    """
    torch = _torch()
    key = _call_key(q, k, v, family, causal, sm_scale, layout, return_lse, causal_alignment,
                    config, v_terms)
    plan = _plans.plan_of_call(key)
    if plan is None:
        plan, q, k, v = _plan_call(torch, key, q, k, v, family, causal, sm_scale, layout,
                                   return_lse, causal_alignment, config, v_terms)
    elif torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
        _check_tensors(torch, q, k, v)  # raises: no backward pass
    out = torch.empty(q.shape, dtype=q.dtype, device=q.device)
    lse = None
    if return_lse:
        lse = torch.empty((plan.spec.batch, plan.spec.heads_q, plan.spec.seq_q), dtype=torch.float32,
                          device=q.device)
    _launch(torch, plan, q, k, v, out, lse)
    return (out, lse) if return_lse else out


def _call_key(q, k, v, *options):
    """What a repeated call has in common with the first: every input's
    dtype, device, shape and strides and every option.  The plan made for the
    first call serves every call with the same key, which then skips the
    checks and the ProblemSpec (tens of microseconds of Python, and host time
    beyond the GPU's is time a caller waits).  None for non-tensors."""
    try:
        return (q.dtype, q.device, q.shape, q.stride(), k.dtype, k.device, k.shape, k.stride(),
                v.dtype, v.device, v.shape, v.stride()) + options
    except (AttributeError, TypeError):
        return None


def _plan_call(torch, key, q, k, v, family, causal, sm_scale, layout, return_lse,
               causal_alignment, config, v_terms):
    """The slow path of a call: checks, copies where needed, the spec and its
    plan.  Remembers the plan under key when the inputs were used in place (a
    call that needed copies keeps taking this path, which makes them)."""
    spec, usable = _checked_spec(torch, q, k, v, family, causal, sm_scale, layout, return_lse,
                                 causal_alignment, config, v_terms)
    plan = _plan(torch, spec)
    if key is not None and all(a is b for a, b in zip(usable, (q, k, v))):
        _plans.remember_call(key, plan)
    return (plan,) + usable


def _launch(torch, plan, q, k, v, out, lse):
    stream = torch.cuda.current_stream(q.device).cuda_stream
    args = (plan.handle, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
            lse.data_ptr() if lse is not None else None, stream)
    if torch.cuda.current_device() == plan.spec.device:
        check(lib.mxattn_run(*args))
    else:
        # Keeps PyTorch's current device as it was, whatever the driver
        # context the library makes current for q's device.
        with torch.cuda.device(plan.spec.device):
            check(lib.mxattn_run(*args))


def tune(q, k, v, *, family="f16", causal=False, sm_scale=None, layout="HND",
         return_lse=False, causal_alignment="top-left"):
    """Tunes the kernel for this problem on q's GPU and stores the winner in
    the database (mxattn_tune).  Takes the same arguments as attention();
    the tensors only describe the problem.  Returns (config, speedup over the
    heuristic default).  Cached plans of the same kernel are dropped so that
    the next attention() call uses the tuned configuration."""
    torch = _torch()
    spec, _ = _checked_spec(torch, q, k, v, family, causal, sm_scale, layout, return_lse,
                            causal_alignment)
    with torch.cuda.device(spec.device):
        return _plans.tune(spec)


def candidates(q, k, v, *, family="f16", causal=False, sm_scale=None, layout="HND",
               return_lse=False, causal_alignment="top-left", v_terms=1, limit=64):
    """The configurations the tuner would time for this problem, without
    compiling anything (mxattn_candidates): the heuristic default first (what
    a plan builds where the database has no tuned row), then the rest best
    first by the analytic prior; at most `limit`.  Any of them can be passed
    as attention(config=...)."""
    torch = _torch()
    if not isinstance(limit, int) or limit < 1:
        raise ValueError(f"mxattn: limit must be a positive int, not {limit!r}")
    spec, _ = _checked_spec(torch, q, k, v, family, causal, sm_scale, layout, return_lse,
                            causal_alignment, None, v_terms)
    return _plans.candidates(spec, limit)


def plan_info(q, k, v, *, family="f16", causal=False, sm_scale=None, layout="HND",
              return_lse=False, causal_alignment="top-left", config=None, v_terms=1):
    """What the plan for this problem chose (config, kernel name, compile time,
    registers, ...), as a dict; makes the plan if there is none yet."""
    torch = _torch()
    spec, _ = _checked_spec(torch, q, k, v, family, causal, sm_scale, layout, return_lse,
                            causal_alignment, config, v_terms)
    return _plan(torch, spec).info()
