# One SDPA cuDNN call (for ncu): B=4 H=32 N=16384 D=64 bf16, non-causal.
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
q, k, v = (torch.randn(4, 32, 16384, 64, device="cuda", dtype=torch.bfloat16) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        torch.nn.functional.scaled_dot_product_attention(q, k, v)
torch.cuda.synchronize()
