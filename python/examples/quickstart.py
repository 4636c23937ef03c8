"""The README's Python quick start: one attention call beside PyTorch's.

    python3 python/examples/quickstart.py

Runs one problem where PyTorch sees a CUDA GPU; elsewhere it says why not
and exits 0 (CI runs it on machines without a GPU).
"""
import mxattn

print("mxattn", mxattn.__version__, "from", mxattn.library_path())
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None
if torch is None or not torch.cuda.is_available():
    print("no PyTorch with a CUDA GPU here: nothing to run")
    raise SystemExit(0)

q, k, v = (torch.randn(2, 8, 1024, 128, dtype=torch.bfloat16, device="cuda") for _ in range(3))
with torch.inference_mode():
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    for family in ("f16", "int8-fp8"):
        o = mxattn.scaled_dot_product_attention(q, k, v, is_causal=True, family=family)
        cos = F.cosine_similarity(o.flatten().float(), ref.flatten().float(), dim=0).item()
        print(f"{family:9s} cosine to torch SDPA {cos:.5f}")

    # One line puts mxattn in the place of F.scaled_dot_product_attention;
    # calls it cannot serve (masks, dropout, grad, float32, CPU) go to PyTorch.
    with mxattn.patch_sdpa(family="int8-fp8"):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    print("patched  ", tuple(o.shape), o.dtype)
