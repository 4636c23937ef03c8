"""scaled_dot_product_attention with PyTorch's signature, the mxattn::sdpa
torch.library op behind it, and patch_sdpa(), which puts it in the place of
torch.nn.functional.scaled_dot_product_attention.

torch is imported inside the functions, so `import mxattn` works without it.
"""
import math
import threading

from ._torch_api import attention

OP_NAME = "mxattn::sdpa"
# The op's schema: the tensors and every option that changes the answer.
# "" for config lets mxattn choose, as None does in attention().
_SCHEMA = ("sdpa(Tensor query, Tensor key, Tensor value, bool is_causal=False, "
           "float? scale=None, str family=\"f16\", str config=\"\", int v_terms=1) -> Tensor")

_lock = threading.Lock()
_library = None     # the torch.library.Library that owns the op's registrations
_op = None          # torch.ops.mxattn.sdpa.default once registered
_op_error = None    # why registration failed, raised where the op is needed


_torch_module = None


def _torch():
    """The torch module, imported once: a traced call (torch.compile) then
    only reads a global and never runs an import statement."""
    global _torch_module
    if _torch_module is None:
        try:
            import torch
        except ImportError as e:
            raise ImportError("mxattn.scaled_dot_product_attention and patch_sdpa need "
                              "PyTorch (import torch failed)") from e
        _torch_module = torch
    return _torch_module


# --- the op -----------------------------------------------------------------------


def _sdpa_cuda(query, key, value, is_causal=False, scale=None, family="f16", config="",
               v_terms=1):
    """The op's CUDA kernel: attention() on PyTorch's current stream, output
    newly allocated by PyTorch's allocator (contiguous, q's shape and dtype)."""
    return attention(query, key, value, family=family, causal=is_causal, sm_scale=scale,
                     config=config or None, v_terms=v_terms)


def _sdpa_fake(query, key, value, is_causal=False, scale=None, family="f16", config="",
               v_terms=1):
    """The op's fake (meta) kernel: the output's shape, dtype and strides,
    which must be the CUDA kernel's (contiguous), for torch.compile's tracing."""
    return query.new_empty(query.shape)


def register_op():
    """Registers mxattn::sdpa with PyTorch (once; later calls return the op).

    The op is registered directly (torch.library.Library.define + impl +
    register_fake) rather than with torch.library.custom_op: custom_op wraps
    every call in Python layers of its own (autograd and fake-mode checks,
    argument re-binding) before the dispatcher reaches the kernel, host time
    that a call at a small shape spends on top of ours; cuDNN's frontend
    advises the same for its PyTorch ops.  bench/overhead.py measures both
    paths against plain SDPA."""
    global _library, _op, _op_error
    if _op is not None:
        return _op
    with _lock:
        if _op is not None:
            return _op
        if _op_error is not None:
            raise _op_error
        torch = _torch()
        try:
            existing = getattr(getattr(torch.ops, "mxattn"), "sdpa", None)
        except (AttributeError, RuntimeError):
            existing = None
        if existing is None:
            try:
                library = torch.library.Library("mxattn", "DEF")
                library.define(_SCHEMA)
                library.impl("sdpa", _sdpa_cuda, "CUDA")
                register_fake = getattr(torch.library, "register_fake", None) \
                    or torch.library.impl_abstract
                register_fake(OP_NAME, lib=library)(_sdpa_fake)
            except Exception as e:  # an old torch, or another copy owns the namespace
                _op_error = RuntimeError(f"mxattn: could not register the {OP_NAME} op "
                                         f"with PyTorch {torch.__version__}: {e}")
                raise _op_error from e
            _library = library
            existing = torch.ops.mxattn.sdpa
        _op = existing.default
        return _op


# --- what it cannot do ---------------------------------------------------------------


def _refusal(torch, query, key, value, attn_mask, dropout_p, scale, enable_gqa):
    """None if mxattn can serve the call, else (exception class, message).
    One predicate for the errors and for patch_sdpa's fallback."""
    if attn_mask is not None:
        return NotImplementedError, (
            "mxattn: attn_mask is not supported; for a causal mask pass is_causal=True "
            "(top-left, as PyTorch), or use mxattn.attention(..., causal=True, "
            "causal_alignment='bottom-right') for FlashAttention's alignment")
    if dropout_p != 0.0:
        return NotImplementedError, (
            f"mxattn: dropout_p={dropout_p} is not supported (inference only): pass 0.0, "
            "e.g. dropout_p=self.dropout if self.training else 0.0")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, torch.Tensor):
            return TypeError, f"mxattn: {name} must be a torch.Tensor"
    if query.dim() not in (3, 4) or key.dim() != query.dim() or value.dim() != query.dim():
        return ValueError, (
            "mxattn: query, key and value must all be [B, H, N, D] or all [H, N, D], got "
            f"{tuple(query.shape)}, {tuple(key.shape)}, {tuple(value.shape)}")
    if not (query.is_cuda and key.is_cuda and value.is_cuda):
        return ValueError, (f"mxattn: query, key and value must be CUDA tensors, are on "
                            f"{query.device}, {key.device}, {value.device}")
    if query.dtype not in (torch.float16, torch.bfloat16):
        return ValueError, (f"mxattn: query, key and value must be float16 or bfloat16, "
                            f"not {query.dtype}")
    if not (query.dtype == key.dtype == value.dtype):
        return ValueError, (f"mxattn: query, key and value differ in dtype "
                            f"({query.dtype}, {key.dtype}, {value.dtype})")
    if torch.is_grad_enabled() and (query.requires_grad or key.requires_grad
                                    or value.requires_grad):
        return NotImplementedError, (
            "mxattn has no backward pass: call it under torch.no_grad() or "
            "torch.inference_mode() (mxattn.patch_sdpa sends such calls to PyTorch)")
    head_dim = query.shape[-1]
    if key.shape[-1] != head_dim or value.shape[-1] != head_dim:
        return ValueError, (f"mxattn: query, key and value must share the head dim, got "
                            f"{query.shape[-1]}, {key.shape[-1]}, {value.shape[-1]}")
    if not 8 <= head_dim <= 256:
        return ValueError, f"mxattn: the head dim must be in 8..256, got {head_dim}"
    if key.shape != value.shape:
        return ValueError, (f"mxattn: key and value differ in shape "
                            f"({tuple(key.shape)}, {tuple(value.shape)})")
    if query.dim() == 4 and query.shape[0] != key.shape[0]:
        return ValueError, (f"mxattn: query and key differ in batch "
                            f"({query.shape[0]}, {key.shape[0]})")
    heads_q, heads_kv = query.shape[-3], key.shape[-3]
    if heads_q != heads_kv:
        if not enable_gqa:
            return ValueError, (
                f"mxattn: query has {heads_q} heads and key {heads_kv}; pass enable_gqa=True "
                "for grouped-query attention (as with PyTorch's SDPA)")
        if heads_kv == 0 or heads_q % heads_kv != 0:
            return ValueError, (f"mxattn: with enable_gqa, query's {heads_q} heads must be a "
                                f"multiple of key's {heads_kv}")
    if query.numel() == 0 or key.numel() == 0:
        return ValueError, "mxattn: empty query or key (a dim of size 0)"
    if scale is not None and not (isinstance(scale, (int, float)) and scale > 0
                                  and math.isfinite(scale)):
        return ValueError, f"mxattn: scale must be None or a finite number > 0, got {scale!r}"
    return None


def unsupported_reason(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                       scale=None, enable_gqa=False):
    """Why mxattn cannot serve this SDPA call (a string), or None if it can:
    what patch_sdpa asks before it sends a call to PyTorch instead."""
    refusal = _refusal(_torch(), query, key, value, attn_mask, dropout_p, scale, enable_gqa)
    return refusal[1] if refusal else None


# --- the function ---------------------------------------------------------------------


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False, *,
                                 family="f16", config=None, v_terms=1):
    """torch.nn.functional.scaled_dot_product_attention's call, run by mxattn.

    query [B, Hq, Nq, D], key and value [B, Hkv, Nk, D] (PyTorch's layout), or
    the same without B ([H, N, D]); other ranks are refused.  float16 or
    bfloat16 CUDA tensors, all one dtype; the output has query's shape and
    dtype (newly allocated, contiguous).  Any strides with a unit-stride last
    dim are read in place; others are copied first.

    is_causal: PyTorch's top-left mask (query i sees keys j <= i).
    scale: None for 1/sqrt(D); else a finite number > 0.
    enable_gqa: lets Hq be a multiple of Hkv (query head h reads key/value
        head h // (Hq // Hkv)); without it Hq != Hkv is an error, as in PyTorch.
    family, config, v_terms (keyword-only): as in mxattn.attention().

    Refused with a clear error: attn_mask (NotImplementedError; is_causal is
    the supported mask), dropout_p > 0 (NotImplementedError), inputs that
    require grad while grad mode is on (NotImplementedError at the call:
    there is no backward pass), float32 or other dtypes, CPU tensors, D
    outside 8..256, key and value of different shapes (ValueError).

    Under torch.compile the call is the mxattn::sdpa op (fake kernel
    included), so fullgraph=True traces through it; in eager mode it calls
    the library directly, which costs less host time than the dispatcher.
    CUDA graphs: make the plan with one call before capturing (see attention()).
    """
    torch = _torch()
    refusal = _refusal(torch, query, key, value, attn_mask, dropout_p, scale, enable_gqa)
    if refusal is not None:
        raise refusal[0](refusal[1])
    batched = query.dim() == 4
    if not batched:
        query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
    if torch.compiler.is_compiling():
        op = _op if _op is not None else register_op()  # raises why it is missing
        out = op(query, key, value, is_causal, scale, family, config or "", v_terms)
    else:
        out = attention(query, key, value, family=family, causal=is_causal, sm_scale=scale,
                        config=config, v_terms=v_terms)
    return out if batched else out.squeeze(0)


# --- in a model's place -------------------------------------------------------------------


class SdpaPatch:
    """What patch_sdpa() did: undo() (or leaving the `with` block) puts back
    the function that was there before."""

    def __init__(self, functional, previous, replacement):
        self._functional = functional
        self.previous = previous
        self.replacement = replacement

    def undo(self):
        if self._functional.scaled_dot_product_attention is self.replacement:
            self._functional.scaled_dot_product_attention = self.previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.undo()
        return False


def patch_sdpa(family="f16", *, config=None, v_terms=1, fallback=True):
    """Puts mxattn in the place of torch.nn.functional.scaled_dot_product_attention:

        mxattn.patch_sdpa(family="int8-fp8")       # until mxattn.unpatch_sdpa()
        with mxattn.patch_sdpa(family="f16"):      # or for a block
            model(x)

    Calls mxattn cannot serve (an attn_mask, dropout, inputs that need grad,
    CPU tensors, float32, a head dim outside 8..256, unknown keywords) go to
    PyTorch's own function, unless fallback=False, which raises instead (to
    make sure a model really runs on mxattn).  Code that looks the function
    up when it calls (F.scaled_dot_product_attention(...), as
    transformers, timm and diffusers do) sees the patch; a name bound
    earlier by `from torch.nn.functional import scaled_dot_product_attention`
    does not.  Works under torch.compile (fallbacks included).
    Returns an SdpaPatch, a context manager."""
    torch = _torch()
    functional = torch.nn.functional
    previous = functional.scaled_dot_product_attention
    original = getattr(previous, "_mxattn_original", previous)

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False, **kwargs):
        refusal = _refusal(torch, query, key, value, attn_mask, dropout_p, scale, enable_gqa)
        if refusal is None and not kwargs:
            return scaled_dot_product_attention(query, key, value, is_causal=is_causal,
                                                scale=scale, enable_gqa=enable_gqa,
                                                family=family, config=config, v_terms=v_terms)
        if not fallback:
            if refusal is None:
                raise TypeError(f"mxattn: unsupported keyword arguments {sorted(kwargs)}")
            raise refusal[0](refusal[1])
        if enable_gqa:
            kwargs["enable_gqa"] = True
        return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p,
                        is_causal=is_causal, scale=scale, **kwargs)

    sdpa.__doc__ = (f"mxattn.patch_sdpa(family={family!r}) in the place of PyTorch's "
                    "scaled_dot_product_attention, which serves what mxattn cannot.")
    sdpa._mxattn_original = original
    functional.scaled_dot_product_attention = sdpa
    return SdpaPatch(functional, previous, sdpa)


def unpatch_sdpa():
    """Puts PyTorch's own scaled_dot_product_attention back (after any
    number of patch_sdpa calls); does nothing if none is in place."""
    functional = _torch().nn.functional
    current = functional.scaled_dot_product_attention
    functional.scaled_dot_product_attention = getattr(current, "_mxattn_original", current)
