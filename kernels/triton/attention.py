"""Fused causal attention forward in Triton (the flash-attention scheme): softmax(q k^T / sqrt(d)) v
without ever writing the [n, n] score matrix.

Each program owns BLOCK_M query rows of one (batch, head).  It walks the keys in BLOCK_N tiles,
keeping a running row max m, a running normaliser l and an unnormalised float32 accumulator in
registers: when a tile raises the max, the earlier sums are rescaled by exp(m_old - m_new)
("online softmax"), so one pass over k and v gives the exact result.  The unfused version writes
the scores, reads them for the mask, the softmax and the cast, and reads the probabilities again
for the second matmul: O(n^2) memory traffic per head against O(n d) here.  Causal programs stop
at their own diagonal tile, skipping the masked half of the work.
"""
import math

import torch
import triton
import triton.language as tl

BLOCK_M, BLOCK_N = 64, 64
LOG2E = 1.4426950408889634   # exp(x) == exp2(x * log2(e)); exp2 is the cheaper instruction


@triton.jit
def _attention_fwd(q_ptr, k_ptr, v_ptr, o_ptr, n_ctx, qk_scale,
                   stride_b, stride_n, CAUSAL: tl.constexpr, HEAD: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * stride_b     # q, k, v, o share one contiguous layout
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD)
    q = tl.load(q_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :], mask=offs_m[:, None] < n_ctx, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD), dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum((start_m + 1) * BLOCK_M, n_ctx)   # keys past the last row's diagonal are all masked
    else:
        hi = n_ctx
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        in_range = offs_n[:, None] < n_ctx
        k = tl.load(k_ptr + base + offs_n[:, None] * stride_n + offs_d[None, :], mask=in_range, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * stride_n + offs_d[None, :], mask=in_range, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale                 # [BLOCK_M, BLOCK_N], log2 units, float32
        valid = offs_n[None, :] < n_ctx
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, -float("inf"))
        # Every row sees key 0 in its first tile (causal: key 0 <= row), so m_new is finite there on.
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)                           # rescales what was summed so far
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * stride_n + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < n_ctx)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = True) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v (causal: key j > query i masked) for float16 q, k, v of one
    shape [batch, heads, n, d], d a power of two from 16 to 128; float16 out."""
    if q.dim() != 4 or k.shape != q.shape or v.shape != q.shape:
        raise ValueError("attention needs q, k, v of one shape [batch, heads, n, d]")
    if not (q.dtype == k.dtype == v.dtype == torch.float16):
        raise ValueError("attention needs float16 q, k, v")
    batch, heads, n, d = q.shape
    if d not in (16, 32, 64, 128):
        raise ValueError(f"attention needs a head dimension of 16, 32, 64 or 128, got {d}")
    q, k, v = (t.contiguous() for t in (q, k, v))
    out = torch.empty_like(q)
    grid = (triton.cdiv(n, BLOCK_M), batch * heads)
    _attention_fwd[grid](q, k, v, out, n, LOG2E / math.sqrt(d), q.stride(1), q.stride(2),
                         CAUSAL=causal, HEAD=d, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=2)
    return out
