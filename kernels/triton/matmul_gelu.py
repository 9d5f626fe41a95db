"""Tiled matrix product with a fused bias + GELU epilogue in Triton: C = gelu(A @ B + bias).

Each program computes one [BM, BN] tile of C, accumulating A and B tiles in float32 with tl.dot
(tensor cores for float16 inputs), then applies bias and GELU to the tile in registers before its
single store: the unfused version writes C, then reads and writes it again for every epilogue op.
Programs are ordered in groups of GROUP_M tile-rows so that neighbours share B tiles in L2.
"""
import torch
import triton
import triton.language as tl

BM, BN, BK, GROUP_M = 128, 128, 64, 8


@triton.jit
def _matmul_bias_gelu(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K,
                      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                      BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % per_group) % group_rows
    pid_n = (pid % per_group) // group_rows

    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    h = acc + tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    z = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    out = h * tl.sigmoid(2.0 * z)                       # 0.5 (1 + tanh(z)) == sigmoid(2 z)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, out.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(a @ b + bias) for float16 a [M, K], b [K, N], bias [N]; float16 out."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0] or bias.shape != (b.shape[1],):
        raise ValueError("matmul_bias_gelu needs a [M, K], b [K, N], bias [N]")
    if not (a.dtype == b.dtype == bias.dtype == torch.float16):
        raise ValueError("matmul_bias_gelu needs float16 inputs")
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(m, BM) * triton.cdiv(n, BN),)
    _matmul_bias_gelu[grid](a, b, bias, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BM=BM, BN=BN, BK=BK, GROUP_M=GROUP_M,
                            num_warps=8, num_stages=3)
    return c
