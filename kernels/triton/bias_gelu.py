"""Fused bias + GELU (tanh form) epilogue in Triton: out = gelu(x + bias), bias broadcast over rows.

One read of x and one write of out; the unfused torch expression launches a kernel, and streams a
full-size temporary, for each of its ~7 operations.
"""
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _bias_gelu(x_ptr, bias_ptr, out_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(x_ptr + offs, mask=mask, other=0.0) + tl.load(bias_ptr + offs % cols, mask=mask, other=0.0)
    # 0.5 (1 + tanh(z)) == sigmoid(2 z)
    z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    tl.store(out_ptr + offs, h * tl.sigmoid(2.0 * z), mask=mask)


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(x + bias) for float32 x [rows, cols] and bias [cols]."""
    if x.dim() != 2 or x.dtype != torch.float32 or bias.shape != (x.shape[1],):
        raise ValueError("bias_gelu needs float32 x [rows, cols] and bias [cols]")
    x, bias = x.contiguous(), bias.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _bias_gelu[(triton.cdiv(n, BLOCK),)](x, bias, out, n, x.shape[1], BLOCK=BLOCK)
    return out
