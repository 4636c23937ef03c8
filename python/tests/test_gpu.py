"""mxattn.attention and mxattn.scaled_dot_product_attention against PyTorch's
scaled_dot_product_attention in float64; torch.compile, CUDA graphs and
patch_sdpa.

    MXATTN_LIB=build/libmxattn.so python3 -m unittest discover -s python/tests -p test_gpu.py -v

Skips where torch or a CUDA GPU is missing.  Inputs are fresh Gaussian
tensors on every run; a failure message names the seed that reproduces it.
"""
import copy
import math
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import mxattn  # noqa: E402

try:
    import torch
    import torch.nn.functional as F
    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    torch = None
    HAVE_GPU = False

# Relative L1 error, sum|o - ref| / sum|ref|, allowed for the f16 family.
# PyTorch's own bf16 SDPA reaches about 2.2e-3 (shared/anchors).
F16_MAX_REL_L1 = 3e-3

# Cosine similarity required of the quantized families on Gaussian inputs.
# i.i.d. Gaussian Q/K give near-uniform attention, the hardest case for FP4 P:
# the design note (shared/design) measured NVFP4 98.1% and MXFP4 96.5% there,
# INT8 QK with FP16 PV 99.99%, and FP4 for P·V alone about 99.5%.
QUANTIZED_MIN_COS = {
    "int8-f16": 0.999,
    "int8-fp8": 0.995,
    "nvfp4-int8qk": 0.99,
    "nvfp4": 0.975,
    "mxfp4": 0.95,
}


def fresh_seed():
    seed = random.randrange(2**31)
    torch.manual_seed(seed)
    return seed


def to_hnd(t, layout):
    return t if layout == "HND" else t.transpose(1, 2)


def make_inputs(batch, heads_q, heads_kv, seq_q, seq_k, head_dim, dtype, layout):
    """Contiguous q, k, v in the given layout."""
    def tensor(heads, seq):
        shape = (batch, heads, seq, head_dim) if layout == "HND" else (batch, seq, heads, head_dim)
        return torch.randn(shape, dtype=dtype, device="cuda")
    return tensor(heads_q, seq_q), tensor(heads_kv, seq_k), tensor(heads_kv, seq_k)


def visible_keys(seq_q, seq_k, causal, alignment):
    """Boolean [seq_q, seq_k]: which keys each query sees."""
    rows = torch.arange(seq_q, device="cuda")[:, None]
    cols = torch.arange(seq_k, device="cuda")[None, :]
    if not causal:
        return torch.ones(seq_q, seq_k, dtype=torch.bool, device="cuda")
    offset = 0 if alignment == "top-left" else seq_k - seq_q
    return cols <= rows + offset


def reference(q, k, v, layout="HND", causal=False, alignment="top-left", sm_scale=None):
    """SDPA in float64: (output in q's layout, lse [B, Hq, Nq]).  Rows that see
    no key get zeros and an LSE of -inf, as the library documents."""
    q, k, v = (to_hnd(t, layout).double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(q.shape[-1])
    mask = visible_keys(q.shape[2], k.shape[2], causal, alignment)
    if causal and alignment == "top-left":
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    sees_a_key = mask.any(dim=1)
    out = torch.where(sees_a_key[:, None], out, torch.zeros_like(out))
    scores = (q @ k.transpose(-1, -2)) * scale
    lse = torch.logsumexp(scores.masked_fill(~mask, float("-inf")), dim=-1)
    return to_hnd(out, layout), lse


def rel_l1(out, ref):
    return ((out.double() - ref).abs().sum() / ref.abs().sum()).item()


def cosine(out, ref):
    return F.cosine_similarity(out.double().flatten(), ref.flatten(), dim=0).item()


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class F16FamilyTest(unittest.TestCase):
    """The unquantized family must match SDPA to bf16 rounding."""

    def check_case(self, batch=2, heads_q=8, heads_kv=2, seq_q=256, seq_k=256, head_dim=64,
                   dtype=None, layout="HND", causal=False, alignment="top-left", sm_scale=None):
        dtype = dtype or torch.bfloat16
        seed = fresh_seed()
        q, k, v = make_inputs(batch, heads_q, heads_kv, seq_q, seq_k, head_dim, dtype, layout)
        out, lse = mxattn.attention(q, k, v, causal=causal, causal_alignment=alignment,
                                    layout=layout, sm_scale=sm_scale, return_lse=True)
        ref, ref_lse = reference(q, k, v, layout, causal, alignment, sm_scale)
        self.assertEqual((out.shape, out.dtype), (q.shape, q.dtype))
        self.assertEqual((lse.shape, lse.dtype), ((batch, heads_q, seq_q), torch.float32))
        error = rel_l1(out, ref)
        self.assertLess(error, F16_MAX_REL_L1, f"rel-L1 {error:.2e}, seed {seed}")
        self.assertTrue(torch.allclose(lse.double(), ref_lse, atol=5e-3, rtol=0),
                        f"lse differs by {(lse.double() - ref_lse).abs().max():.2e}, seed {seed}")

    def test_dtypes_layouts_causal(self):
        for dtype in (torch.float16, torch.bfloat16):
            for layout in ("HND", "NHD"):
                for causal in (False, True):
                    with self.subTest(dtype=dtype, layout=layout, causal=causal):
                        self.check_case(dtype=dtype, layout=layout, causal=causal)

    def test_head_dims(self):
        for head_dim in (32, 72, 80, 100, 128, 256):
            for causal in (False, True):
                with self.subTest(head_dim=head_dim, causal=causal):
                    self.check_case(head_dim=head_dim, causal=causal, seq_q=200, seq_k=200)

    def test_grouped_query_heads(self):
        for heads_q, heads_kv in ((8, 8), (8, 4), (8, 1), (12, 3)):
            with self.subTest(heads_q=heads_q, heads_kv=heads_kv):
                self.check_case(heads_q=heads_q, heads_kv=heads_kv, layout="NHD", causal=True)

    def test_unequal_sequence_lengths(self):
        for seq_q, seq_k in ((100, 300), (1, 517), (300, 100), (64, 1)):
            for causal, alignment in ((False, "top-left"), (True, "top-left"),
                                      (True, "bottom-right")):
                if alignment == "bottom-right" and seq_q > seq_k:
                    continue  # rows without keys: test_rows_that_see_no_key
                with self.subTest(seq_q=seq_q, seq_k=seq_k, causal=causal, alignment=alignment):
                    self.check_case(seq_q=seq_q, seq_k=seq_k, causal=causal, alignment=alignment)

    def test_explicit_scale(self):
        self.check_case(sm_scale=0.3)

    def test_rows_that_see_no_key(self):
        # Bottom-right with Nq > Nk: the first Nq - Nk queries see nothing.
        seed = fresh_seed()
        q, k, v = make_inputs(1, 4, 4, 300, 100, 64, torch.bfloat16, "HND")
        out, lse = mxattn.attention(q, k, v, causal=True, causal_alignment="bottom-right",
                                    return_lse=True)
        ref, ref_lse = reference(q, k, v, "HND", True, "bottom-right")
        blind = slice(0, 200)
        self.assertTrue(torch.all(out[:, :, blind] == 0), f"seed {seed}")
        self.assertTrue(torch.all(torch.isneginf(lse[:, :, blind])), f"seed {seed}")
        self.assertLess(rel_l1(out[:, :, 200:], ref[:, :, 200:]), F16_MAX_REL_L1, f"seed {seed}")
        self.assertTrue(torch.allclose(lse[:, :, 200:].double(), ref_lse[:, :, 200:], atol=5e-3))

    def test_strided_inputs_are_read_in_place(self):
        seed = fresh_seed()
        # NHD slices of a packed [B, N, 3, H, D] projection, as a model makes them.
        qkv = torch.randn(2, 256, 3, 8, 64, dtype=torch.bfloat16, device="cuda")
        q, k, v = qkv.unbind(dim=2)
        out = mxattn.attention(q, k, v, layout="NHD", causal=True)
        ref, _ = reference(q, k, v, "NHD", causal=True)
        self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1, f"packed qkv, seed {seed}")
        # HND: every other head and an offset window of a longer sequence.
        big = torch.randn(3, 2, 16, 300, 64, dtype=torch.bfloat16, device="cuda")
        q, k, v = (big[i, :, ::2, 8:264] for i in range(3))
        self.assertFalse(q.is_contiguous())
        out = mxattn.attention(q, k, v)
        ref, _ = reference(q, k, v)
        self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1, f"head/seq slices, seed {seed}")

    def test_last_dim_not_contiguous_is_copied(self):
        seed = fresh_seed()
        q, k, v = (torch.randn(2, 4, 64, 128, dtype=torch.float16, device="cuda").transpose(2, 3)
                   for _ in range(3))
        self.assertNotEqual(q.stride(-1), 1)
        out = mxattn.attention(q, k, v)
        ref, _ = reference(q, k, v)
        self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1, f"seed {seed}")

    def test_side_stream_and_no_grad(self):
        q, k, v = make_inputs(2, 4, 4, 128, 128, 64, torch.bfloat16, "HND")
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(stream):
            out = mxattn.attention(q, k, v)
        stream.synchronize()
        ref, _ = reference(q, k, v)
        self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1)


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class BindingTest(unittest.TestCase):
    """Plan caching, argument errors and CUDA graph capture."""

    def test_second_call_makes_no_plan(self):
        q, k, v = make_inputs(1, 4, 4, 96, 96, 64, torch.bfloat16, "HND")
        mxattn.attention(q, k, v, sm_scale=0.21)
        count = mxattn.plan_count()
        q2, k2, v2 = make_inputs(1, 4, 4, 96, 96, 64, torch.bfloat16, "HND")
        mxattn.attention(q2, k2, v2, sm_scale=0.21)
        self.assertEqual(mxattn.plan_count(), count)
        mxattn.attention(q2, k2, v2, sm_scale=0.22)  # another scale: another plan
        self.assertEqual(mxattn.plan_count(), count + 1)

    def test_repeated_calls_check_what_changed(self):
        """A repeat call reuses the first call's plan without its checks; what
        the plan depends on (strides, grad mode) must still be honoured."""
        q, k, v = make_inputs(1, 4, 4, 80, 80, 64, torch.bfloat16, "HND")
        for _ in range(2):
            out = mxattn.attention(q, k, v)
            self.assertLess(rel_l1(out, reference(q, k, v)[0]), F16_MAX_REL_L1)
        # Same shape, other strides: a view of a wider buffer.
        wide = torch.randn(1, 4, 80, 128, dtype=torch.bfloat16, device="cuda")
        q2 = wide[..., :64]
        out = mxattn.attention(q2, k, v)
        self.assertLess(rel_l1(out, reference(q2, k, v)[0]), F16_MAX_REL_L1)
        with self.assertRaises(ValueError):
            mxattn.attention(q.clone().requires_grad_(), k, v)
        with torch.no_grad():
            mxattn.attention(q.clone().requires_grad_(), k, v)

    def test_plan_info(self):
        q, k, v = make_inputs(1, 4, 4, 96, 96, 64, torch.bfloat16, "HND")
        info = mxattn.plan_info(q, k, v)
        self.assertIn(info["config_source"], ("explicit", "tuned", "tuned-other-build", "default"))
        self.assertTrue(info["config"])

    def test_candidates_start_with_what_a_plan_builds(self):
        q, k, v = make_inputs(1, 4, 4, 200, 333, 80, torch.bfloat16, "HND")
        configs = mxattn.candidates(q, k, v, family="int8-fp8", causal=True, limit=8)
        self.assertTrue(1 < len(configs) <= 8)
        self.assertEqual(len(set(configs)), len(configs))
        # The first is the heuristic default, which an untuned plan builds.
        plan = mxattn.plan_info(q, k, v, family="int8-fp8", causal=True, config=configs[0])
        self.assertEqual(plan["config"], configs[0])
        # Every one runs, and agrees with the default's output.
        want = mxattn.attention(q, k, v, family="int8-fp8", causal=True, config=configs[0])
        got = mxattn.attention(q, k, v, family="int8-fp8", causal=True, config=configs[-1])
        self.assertGreater(torch.nn.functional.cosine_similarity(got.flatten().float(),
                                                                  want.flatten().float(), dim=0), 0.999)
        with self.assertRaises(ValueError):
            mxattn.candidates(q, k, v, limit=0)

    def test_heads_not_a_multiple_is_a_value_error(self):
        q, k, v = make_inputs(1, 6, 4, 64, 64, 64, torch.bfloat16, "HND")
        with self.assertRaises(ValueError) as caught:
            mxattn.attention(q, k, v)
        self.assertIsInstance(caught.exception, mxattn.MxattnValueError)
        self.assertEqual(caught.exception.status, mxattn.Status.ERROR_INVALID_VALUE)

    def test_python_side_argument_errors(self):
        q, k, v = make_inputs(1, 4, 4, 64, 64, 64, torch.bfloat16, "HND")
        with self.assertRaises(ValueError):
            mxattn.attention(q.float(), k.float(), v.float())
        with self.assertRaises(ValueError):
            mxattn.attention(q, k, v, layout="BHSD")
        with self.assertRaises(ValueError):
            mxattn.attention(q, k, v, causal=True, causal_alignment="middle")
        with self.assertRaises(ValueError):
            mxattn.attention(q.requires_grad_(), k, v)

    def test_cuda_graph_capture_after_warm_up(self):
        q, k, v = make_inputs(2, 8, 8, 256, 256, 64, torch.bfloat16, "HND")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            mxattn.attention(q, k, v, causal=True)  # makes the plan outside capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = mxattn.attention(q, k, v, causal=True)
        for _ in range(2):
            for t in (q, k, v):
                t.copy_(torch.randn_like(t))
            graph.replay()
            torch.cuda.synchronize()
            ref, _ = reference(q, k, v, causal=True)
            self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1)

    def test_cuda_graph_capture_refuses_to_make_a_plan(self):
        q, k, v = make_inputs(1, 4, 4, 77, 77, 64, torch.bfloat16, "HND")
        graph = torch.cuda.CUDAGraph()
        with self.assertRaises(mxattn.MxattnError) as caught:
            with torch.cuda.graph(graph):
                mxattn.attention(q, k, v, sm_scale=0.123)
        self.assertIn("capture", str(caught.exception))


def sdpa64(q, k, v, is_causal=False, scale=None, enable_gqa=False):
    """PyTorch's SDPA in float64 (its math kernel): the reference."""
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=is_causal,
                                          scale=scale, enable_gqa=enable_gqa)


def poison_allocator(nbytes=64 << 20):
    """Leaves NaN (0xFFFF in float16 and bfloat16) in memory the caching
    allocator is about to hand out, so that an output the kernel never wrote
    cannot pass for a stale, correct one."""
    torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(0xFF)


def bhnd(batch, heads, seq, head_dim, dtype=None):
    return torch.randn(batch, heads, seq, head_dim, dtype=dtype or torch.bfloat16, device="cuda")


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class SdpaSemanticsTest(unittest.TestCase):
    """mxattn.scaled_dot_product_attention takes PyTorch's arguments and means
    what PyTorch means by them."""

    def check(self, q, k, v, seed, **kwargs):
        poison_allocator()
        out = mxattn.scaled_dot_product_attention(q, k, v, **kwargs)
        self.assertEqual((out.shape, out.dtype, out.device), (q.shape, q.dtype, q.device))
        ref = sdpa64(q, k, v, **kwargs)
        self.assertTrue(torch.isfinite(out).all(), f"seed {seed}, {kwargs}")
        error = rel_l1(out, ref)
        self.assertLess(error, F16_MAX_REL_L1, f"rel-L1 {error:.2e}, seed {seed}, {kwargs}")
        return out

    def test_causal_is_top_left_and_scale_is_used(self):
        for dtype in (torch.float16, torch.bfloat16):
            for seq_q, seq_k in ((256, 256), (100, 300), (300, 100), (1, 77)):
                for is_causal in (False, True):
                    for scale in (None, 0.3):
                        with self.subTest(dtype=dtype, seq_q=seq_q, seq_k=seq_k,
                                          is_causal=is_causal, scale=scale):
                            seed = fresh_seed()
                            q, k, v = (bhnd(2, 4, n, 64, dtype) for n in (seq_q, seq_k, seq_k))
                            self.check(q, k, v, seed, is_causal=is_causal, scale=scale)

    def test_a_scale_that_is_ignored_is_caught(self):
        # The check above would pass a kernel that ignores scale only if the
        # two scales gave close answers: they must not.
        fresh_seed()
        q, k, v = (bhnd(1, 4, 128, 64) for _ in range(3))
        self.assertGreater(rel_l1(sdpa64(q, k, v, scale=0.3).float(), sdpa64(q, k, v)), 0.05)

    def test_head_dims(self):
        for head_dim in (32, 80, 128, 256):
            with self.subTest(head_dim=head_dim):
                seed = fresh_seed()
                q, k, v = (bhnd(1, 4, 150, head_dim) for _ in range(3))
                self.check(q, k, v, seed, is_causal=True)

    def test_grouped_query_attention_needs_enable_gqa(self):
        for heads_q, heads_kv in ((8, 2), (8, 1), (12, 4)):
            with self.subTest(heads_q=heads_q, heads_kv=heads_kv):
                seed = fresh_seed()
                q, k, v = bhnd(2, heads_q, 200, 64), bhnd(2, heads_kv, 200, 64), bhnd(2, heads_kv, 200, 64)
                self.check(q, k, v, seed, is_causal=True, enable_gqa=True)
                with self.assertRaises(ValueError) as caught:
                    mxattn.scaled_dot_product_attention(q, k, v)
                self.assertIn("enable_gqa", str(caught.exception))
        q, k, v = bhnd(1, 6, 64, 64), bhnd(1, 4, 64, 64), bhnd(1, 4, 64, 64)
        with self.assertRaises(ValueError):
            mxattn.scaled_dot_product_attention(q, k, v, enable_gqa=True)

    def test_three_dim_inputs(self):
        seed = fresh_seed()
        q, k, v = (torch.randn(4, 120, 64, dtype=torch.bfloat16, device="cuda") for _ in range(3))
        out = self.check(q, k, v, seed, is_causal=True)
        self.assertEqual(out.shape, (4, 120, 64))

    def test_strided_inputs(self):
        seed = fresh_seed()
        # [B, N, 3, H, D] projection permuted to [B, H, N, D] views, as models do.
        qkv = torch.randn(2, 160, 3, 4, 64, dtype=torch.bfloat16, device="cuda")
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        self.assertFalse(q.is_contiguous())
        self.check(q, k, v, seed, is_causal=True)
        # Last dim not contiguous: copied first, still right.
        q, k, v = (torch.randn(1, 4, 64, 96, dtype=torch.float16, device="cuda").transpose(2, 3)
                   for _ in range(3))
        self.check(q, k, v, seed)

    def test_what_it_cannot_do_is_refused(self):
        q, k, v = (bhnd(1, 4, 64, 64) for _ in range(3))
        sdpa = mxattn.scaled_dot_product_attention
        mask = torch.ones(64, 64, dtype=torch.bool, device="cuda")
        with self.assertRaises(NotImplementedError) as caught:
            sdpa(q, k, v, attn_mask=mask)
        self.assertIn("is_causal", str(caught.exception))
        with self.assertRaises(NotImplementedError) as caught:
            sdpa(q, k, v, dropout_p=0.1)
        self.assertIn("dropout", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            sdpa(q.float(), k.float(), v.float())
        self.assertIn("float32", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            sdpa(q.cpu(), k.cpu(), v.cpu())
        self.assertIn("CUDA", str(caught.exception))
        for head_dim in (4, 264):
            small = bhnd(1, 2, 16, head_dim)
            with self.assertRaises(ValueError):
                sdpa(small, small, small)
        with self.assertRaises(ValueError):
            sdpa(q[None], k[None], v[None])  # 5-D
        with self.assertRaises(ValueError):
            sdpa(q, k, v[:, :, :32])         # key and value differ in length
        with self.assertRaises(ValueError):
            sdpa(q, k, v, scale=-1.0)
        grad_q = q.clone().requires_grad_()
        with self.assertRaises(NotImplementedError) as caught:
            sdpa(grad_q, k, v)
        self.assertIn("backward", str(caught.exception))
        with torch.no_grad():
            self.assertTrue(torch.isfinite(sdpa(grad_q, k, v)).all())
        for reason_args in ((q, k, v, mask), (q.float(), k.float(), v.float())):
            self.assertIsNotNone(mxattn.unsupported_reason(*reason_args))
        self.assertIsNone(mxattn.unsupported_reason(q, k, v, is_causal=True))

    def test_the_op_itself(self):
        seed = fresh_seed()
        q, k, v = bhnd(1, 8, 130, 64), bhnd(1, 2, 130, 64), bhnd(1, 2, 130, 64)
        poison_allocator()
        out = torch.ops.mxattn.sdpa(q, k, v, True, 0.2, "f16", "", 1)
        ref = sdpa64(q, k, v, is_causal=True, scale=0.2, enable_gqa=True)
        self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1, f"seed {seed}")
        self.assertTrue(out.is_contiguous())


class TinyBlock(torch.nn.Module if torch is not None else object):
    """linear -> attention -> linear, the shape of a transformer block's
    attention.  sdpa None looks F.scaled_dot_product_attention up at each
    call, as models do (and so sees patch_sdpa)."""

    def __init__(self, sdpa=None, dim=256, heads=4, **sdpa_kwargs):
        super().__init__()
        self.sdpa, self.heads, self.sdpa_kwargs = sdpa, heads, sdpa_kwargs
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, n, dim = x.shape
        q, k, v = self.qkv(x).view(b, n, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        sdpa = self.sdpa or F.scaled_dot_product_attention
        o = sdpa(q, k, v, is_causal=True, **self.sdpa_kwargs)
        return self.proj(o.transpose(1, 2).reshape(b, n, dim))


def graph_recorder():
    """A torch.compile backend that keeps the FX graphs it is given and runs them as they are."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return backend, graphs


def uses_mxattn_op(graphs):
    return any("mxattn.sdpa" in str(gm.graph) for gm in graphs)


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class CompileAndGraphTest(unittest.TestCase):
    def setUp(self):
        # Every TinyBlock shares one forward code object: without a reset its
        # recompiles add up to dynamo's limit, past which it runs eagerly.
        torch._dynamo.reset()
    def blocks(self, **sdpa_kwargs):
        """(mxattn block in bfloat16, the same weights with PyTorch's SDPA,
        and in float64 with PyTorch's SDPA: the reference)."""
        block = TinyBlock(mxattn.scaled_dot_product_attention, **sdpa_kwargs).cuda().to(torch.bfloat16)
        with_torch = copy.deepcopy(block)
        with_torch.sdpa, with_torch.sdpa_kwargs = F.scaled_dot_product_attention, {}
        ref = copy.deepcopy(with_torch).double()
        return block, with_torch, ref

    def check_against_torch(self, out, x, with_torch, ref, seed):
        """mxattn's block is as close to float64 as PyTorch's own bfloat16 SDPA block."""
        ref_out = ref(x.double())
        ours, theirs = rel_l1(out, ref_out), rel_l1(with_torch(x), ref_out)
        self.assertTrue(torch.isfinite(out).all(), f"seed {seed}")
        self.assertLess(ours, 1.5 * theirs + 1e-3,
                        f"rel-L1 to float64: mxattn {ours:.2e}, torch SDPA {theirs:.2e}, seed {seed}")

    def test_fullgraph_compile_matches_eager(self):
        seed = fresh_seed()
        block, with_torch, ref = self.blocks()
        x = torch.randn(2, 256, 256, dtype=torch.bfloat16, device="cuda")
        with torch.no_grad():
            eager = block(x)
            backend, graphs = graph_recorder()
            traced = torch.compile(block, backend=backend, fullgraph=True)(x)
            self.assertTrue(uses_mxattn_op(graphs), "the traced graph has no mxattn::sdpa")
            self.assertLess(rel_l1(traced, eager.double()), 1e-3, f"seed {seed}")
            torch._dynamo.reset()  # the next compile must not reuse the recorder's graph
            compiled = torch.compile(block, fullgraph=True)  # inductor
            poison_allocator()
            out = compiled(x)
            self.assertLess(rel_l1(out, eager.double()), 1e-2, f"inductor vs eager, seed {seed}")
            self.check_against_torch(out, x, with_torch, ref, seed)
            # Another length: recompiled with a symbolic N through the fake kernel.
            for n in (192, 320):
                x2 = torch.randn(2, n, 256, dtype=torch.bfloat16, device="cuda")
                out2 = compiled(x2)
                self.assertEqual(out2.shape, x2.shape)
                self.check_against_torch(out2, x2, with_torch, ref, seed)

    def test_compile_passes_the_family(self):
        seed = fresh_seed()
        block, _, _ = self.blocks(family="int8-fp8")
        x = torch.randn(1, 256, 256, dtype=torch.bfloat16, device="cuda")
        with torch.no_grad():
            eager = block(x)
            out = torch.compile(block, fullgraph=True)(x)
        self.assertGreater(cosine(out, eager.double()), 0.999, f"seed {seed}")

    def test_cuda_graph_replay_follows_new_inputs(self):
        for heads_kv in (8, 2):
            with self.subTest(heads_kv=heads_kv):
                seed = fresh_seed()
                q, k, v = bhnd(2, 8, 256, 64), bhnd(2, heads_kv, 256, 64), bhnd(2, heads_kv, 256, 64)
                gqa = heads_kv != 8

                def call():
                    return mxattn.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                               enable_gqa=gqa)
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    call()  # the plan is made here, outside capture
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    out = call()
                for _ in range(3):
                    for t in (q, k, v):
                        t.copy_(torch.randn_like(t))
                    out.fill_(float("nan"))
                    graph.replay()
                    torch.cuda.synchronize()
                    self.assertTrue(torch.isfinite(out).all(), f"seed {seed}")
                    eager = call()
                    self.assertLess(rel_l1(out, eager.double()), 1e-3, f"seed {seed}")
                    ref = sdpa64(q, k, v, is_causal=True, enable_gqa=gqa)
                    self.assertLess(rel_l1(out, ref), F16_MAX_REL_L1, f"seed {seed}")

    def test_capture_without_a_plan_is_refused(self):
        q, k, v = (bhnd(1, 4, 79, 64) for _ in range(3))
        graph = torch.cuda.CUDAGraph()
        with self.assertRaises(mxattn.MxattnError) as caught:
            with torch.cuda.graph(graph):
                mxattn.scaled_dot_product_attention(q, k, v, scale=0.1234)
        self.assertIn("capture", str(caught.exception))

    def test_compile_reduce_overhead_replays_graphs(self):
        # torch.compile's CUDA graphs: warm-up runs make the plan, later calls replay.
        seed = fresh_seed()
        block, with_torch, ref = self.blocks()
        compiled = torch.compile(block, mode="reduce-overhead", fullgraph=True)
        with torch.no_grad():
            for _ in range(4):
                torch.compiler.cudagraph_mark_step_begin()
                x = torch.randn(2, 128, 256, dtype=torch.bfloat16, device="cuda")
                out = compiled(x).clone()
                self.check_against_torch(out, x, with_torch, ref, seed)


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class QuickStartTest(unittest.TestCase):
    def test_quick_start_runs_on_the_gpu(self):
        import subprocess
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        result = subprocess.run([sys.executable, "-B", os.path.join(here, "examples", "quickstart.py")],
                                cwd=here, capture_output=True, text=True,
                                env=dict(os.environ, PYTHONPATH=here))  # the package as installed
        self.assertEqual(result.returncode, 0, result.stderr)
        cosines = [float(line.split()[-1]) for line in result.stdout.splitlines()
                   if "cosine to torch SDPA" in line]
        self.assertEqual(len(cosines), 2, result.stdout)
        self.assertGreater(cosines[0], 0.9999, result.stdout)  # f16
        self.assertGreater(cosines[1], 0.995, result.stdout)   # int8-fp8
        self.assertIn("patched   (2, 8, 1024, 128) torch.bfloat16", result.stdout)


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class PatchSdpaTest(unittest.TestCase):
    def setUp(self):
        self.original = F.scaled_dot_product_attention
        self.addCleanup(setattr, F, "scaled_dot_product_attention", self.original)

    def test_serves_what_it_can_and_falls_back_for_the_rest(self):
        seed = fresh_seed()
        q, k, v = (bhnd(1, 4, 93, 64) for _ in range(3))
        plans = mxattn.plan_count()
        with mxattn.patch_sdpa(family="f16"):
            self.assertIsNot(F.scaled_dot_product_attention, self.original)
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            self.assertEqual(mxattn.plan_count(), plans + 1, "mxattn did not serve the call")
            self.assertLess(rel_l1(out, sdpa64(q, k, v, is_causal=True)), F16_MAX_REL_L1,
                            f"seed {seed}")
            mask = torch.rand(93, 93, device="cuda") > 0.5
            mask.fill_diagonal_(True)
            fallbacks = [((q, k, v), dict(attn_mask=mask)),
                         ((q.float(), k.float(), v.float()), {}),
                         ((q.cpu(), k.cpu(), v.cpu()), dict(is_causal=True)),
                         ((bhnd(1, 4, 93, 4),) * 3, {})]
            for args, kwargs in fallbacks:
                with self.subTest(kwargs=list(kwargs), dtype=args[0].dtype, device=args[0].device):
                    self.assertTrue(torch.equal(F.scaled_dot_product_attention(*args, **kwargs),
                                                self.original(*args, **kwargs)))
            grad_q = q.clone().requires_grad_()
            F.scaled_dot_product_attention(grad_q, k, v, is_causal=True).sum().backward()
            self.assertIsNotNone(grad_q.grad)
            self.assertEqual(mxattn.plan_count(), plans + 1, "a fallback made an mxattn plan")
        self.assertIs(F.scaled_dot_product_attention, self.original)

    def test_family_reaches_the_kernel(self):
        seed = fresh_seed()
        q, k, v = (bhnd(1, 8, 512, 128) for _ in range(3))
        with mxattn.patch_sdpa(family="int8-fp8"):
            out = F.scaled_dot_product_attention(q, k, v)
        direct = mxattn.scaled_dot_product_attention(q, k, v, family="int8-fp8")
        self.assertLess(rel_l1(out, direct.double()), 1e-3, f"seed {seed}")
        f16 = mxattn.scaled_dot_product_attention(q, k, v)
        self.assertGreater(rel_l1(out, f16.double()), 1e-3, "int8-fp8 gave f16's answer")

    def test_unpatch_and_no_fallback(self):
        mxattn.patch_sdpa(family="int8-fp8")
        mxattn.patch_sdpa(family="f16")
        mxattn.unpatch_sdpa()
        self.assertIs(F.scaled_dot_product_attention, self.original)
        mxattn.unpatch_sdpa()  # nothing in place: a no-op
        self.assertIs(F.scaled_dot_product_attention, self.original)
        q, k, v = (bhnd(1, 2, 64, 64) for _ in range(3))
        with mxattn.patch_sdpa(fallback=False):
            with self.assertRaises(NotImplementedError):
                F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    def test_patched_model_compiles_to_the_op(self):
        torch._dynamo.reset()
        seed = fresh_seed()
        block = TinyBlock().cuda().to(torch.bfloat16)  # calls F.scaled_dot_product_attention
        x = torch.randn(2, 128, 256, dtype=torch.bfloat16, device="cuda")
        with torch.no_grad():
            plain = block(x)
            with mxattn.patch_sdpa():
                backend, graphs = graph_recorder()
                out = torch.compile(block, backend=backend, fullgraph=True)(x)
        self.assertTrue(uses_mxattn_op(graphs), "the patched model did not trace to mxattn::sdpa")
        self.assertLess(rel_l1(out, plain.double()), 2e-2, f"seed {seed}")


@unittest.skipUnless(HAVE_GPU, "needs torch and a CUDA GPU")
class QuantizedFamilyTest(unittest.TestCase):
    """Loose bounds: these families trade accuracy for speed."""

    def attention_or_skip(self, family, *args, **kwargs):
        """mxattn.attention, skipping a family the library cannot plan yet."""
        try:
            return mxattn.attention(*args, family=family, **kwargs)
        except mxattn.MxattnError as e:
            not_there = e.status == mxattn.Status.ERROR_UNSUPPORTED or (
                e.status == mxattn.Status.ERROR_INVALID_VALUE and family in e.message)
            if not_there:
                self.skipTest(f"{family}: {e}")
            raise

    def test_cosine_against_float64(self):
        cases = [dict(heads_kv=8, head_dim=64, causal=False, dtype=torch.bfloat16),
                 dict(heads_kv=8, head_dim=128, causal=True, dtype=torch.bfloat16),
                 dict(heads_kv=2, head_dim=128, causal=False, dtype=torch.float16),
                 dict(heads_kv=8, head_dim=80, causal=True, dtype=torch.float16)]
        for family, min_cos in QUANTIZED_MIN_COS.items():
            for case in cases:
                with self.subTest(family=family, **case):
                    seed = fresh_seed()
                    q, k, v = make_inputs(2, 8, case["heads_kv"], 512, 512, case["head_dim"],
                                          case["dtype"], "HND")
                    out = self.attention_or_skip(family, q, k, v, causal=case["causal"])
                    ref, _ = reference(q, k, v, causal=case["causal"])
                    self.assertTrue(torch.isfinite(out).all(), f"seed {seed}")
                    cos = cosine(out, ref)
                    self.assertGreaterEqual(cos, min_cos, f"seed {seed}, rel-L1 {rel_l1(out, ref):.3f}")

    def test_v_terms_cuts_the_error(self):
        """int8-fp8 with V as two E4M3 terms: same inputs, clearly closer to
        float64 than one term (V's rounding error is most of the family's)."""
        seed = fresh_seed()
        q, k, v = make_inputs(1, 8, 8, 512, 2048, 128, torch.bfloat16, "HND")
        ref, _ = reference(q, k, v, causal=False)
        one = self.attention_or_skip("int8-fp8", q, k, v)
        two = self.attention_or_skip("int8-fp8", q, k, v, v_terms=2)
        e1, e2 = rel_l1(one, ref), rel_l1(two, ref)
        self.assertLess(e2, 0.85 * e1, f"seed {seed}: rel-L1 {e1:.4f} -> {e2:.4f}")
        self.assertGreater(cosine(two, ref), cosine(one, ref), f"seed {seed}")
        with self.assertRaises(mxattn.MxattnValueError):
            mxattn.attention(q, k, v, family="f16", v_terms=2)


if __name__ == "__main__":
    unittest.main()
