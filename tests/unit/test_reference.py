"""Each trusted oracle in reference/ against an independent formulation, in float64 and float32."""
import math

import numpy as np
import pytest
import torch

from perfbench_reference import activations, attention, layout, matmul, norms, reductions, softmax, sparse


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _random_csr(rows, cols, per_row, seed=0, dtype=torch.float64):
    """A CSR matrix with empty rows, sorted unique columns, as (crow, col, val, dense)."""
    g = _gen(seed)
    dense = torch.zeros(rows, cols, dtype=dtype)
    for r in range(rows):
        k = int(torch.randint(0, 2 * per_row + 1, (1,), generator=g))
        cols_r = torch.randperm(cols, generator=g)[:k]
        dense[r, cols_r] = torch.randn(len(cols_r), generator=g, dtype=dtype)
    dense[0] = 0                       # at least one empty row, always
    nz = dense.nonzero()
    crow = torch.zeros(rows + 1, dtype=torch.int64)
    crow[1:] = torch.cumsum(torch.bincount(nz[:, 0], minlength=rows), 0)
    return crow, nz[:, 1].contiguous(), dense[nz[:, 0], nz[:, 1]], dense


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_softmax_is_exp_of_x_minus_logsumexp(dtype):
    x = 8 * torch.randn(37, 53, generator=_gen(), dtype=dtype)
    want = torch.exp(x.double() - torch.logsumexp(x.double(), dim=1, keepdim=True))
    got = softmax.softmax(x, dim=1)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), want, rtol=1e-6 if dtype == torch.float32 else 1e-12, atol=1e-9)
    torch.testing.assert_close(got.sum(1).double(), torch.ones(37, dtype=torch.float64), rtol=1e-6, atol=1e-6)


def test_softmax_survives_logits_that_overflow_exp():
    x = torch.tensor([[1000.0, 1000.0, -1000.0]], dtype=torch.float64)
    torch.testing.assert_close(softmax.softmax(x), torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64))


def test_log_softmax_is_log_of_a_python_loop():
    x = torch.randn(5, 7, generator=_gen(1), dtype=torch.float64)
    want = [[v - math.log(sum(math.exp(u) for u in row)) for v in row] for row in x.tolist()]
    torch.testing.assert_close(softmax.log_softmax(x, dim=1), torch.tensor(want, dtype=torch.float64))


def test_layer_norm_against_numpy_moments():
    g = _gen(2)
    x = 3 * torch.randn(9, 64, generator=g, dtype=torch.float64) + 5
    w, b = torch.randn(64, generator=g, dtype=torch.float64), torch.randn(64, generator=g, dtype=torch.float64)
    xn = x.numpy()
    want = (xn - xn.mean(1, keepdims=True)) / np.sqrt(xn.var(1, keepdims=True) + 1e-5) * w.numpy() + b.numpy()
    torch.testing.assert_close(norms.layer_norm(x, w, b), torch.from_numpy(want))


def test_rms_norm_against_numpy():
    g = _gen(3)
    x, w = torch.randn(6, 32, generator=g, dtype=torch.float64), torch.randn(32, generator=g, dtype=torch.float64)
    xn = x.numpy()
    want = xn / np.sqrt((xn ** 2).mean(1, keepdims=True) + 1e-6) * w.numpy()
    torch.testing.assert_close(norms.rms_norm(x, w), torch.from_numpy(want))


def test_gelu_tanh_is_x_times_a_sigmoid():
    # 0.5 (1 + tanh(z)) == sigmoid(2 z): an independent formula for the same function.
    x = torch.linspace(-8, 8, 1001, dtype=torch.float64)
    z = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    torch.testing.assert_close(activations.gelu_tanh(x), x * torch.sigmoid(2 * z))
    # ...and it stays within the approximation's known 1e-3 of the exact (erf) GELU.
    exact = 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))
    assert float((activations.gelu_tanh(x) - exact).abs().max()) < 1e-3


def test_bias_gelu_broadcasts_the_bias_over_rows():
    g = _gen(4)
    x, bias = torch.randn(4, 10, generator=g, dtype=torch.float64), torch.randn(10, generator=g, dtype=torch.float64)
    for i in range(4):
        torch.testing.assert_close(activations.bias_gelu(x, bias)[i], activations.gelu_tanh(x[i] + bias))


def test_matmul_is_a_sum_of_products():
    g = _gen(5)
    a, b = torch.randn(7, 11, generator=g, dtype=torch.float64), torch.randn(11, 13, generator=g, dtype=torch.float64)
    want = (a[:, :, None] * b[None, :, :]).sum(1)
    torch.testing.assert_close(matmul.matmul(a, b), want)
    bias = torch.randn(13, generator=g, dtype=torch.float64)
    torch.testing.assert_close(matmul.matmul_bias_gelu(a, b, bias), activations.gelu_tanh(want + bias))
    with pytest.raises(ValueError, match=r"\[m, k\] @ \[k, n\], got \(7, 11\) @ \(7, 11\)"):
        matmul.matmul(a, a)


def test_row_l2_norm_against_python():
    x = torch.randn(5, 9, generator=_gen(6), dtype=torch.float64)
    want = torch.tensor([math.sqrt(sum(v * v for v in row)) for row in x.tolist()], dtype=torch.float64)
    torch.testing.assert_close(reductions.row_l2_norm(x), want)


def test_segment_sum_against_split():
    g = _gen(7)
    lengths = torch.randint(0, 4, (40,), generator=g)
    lengths[3] = 0
    v = torch.randn(int(lengths.sum()), generator=g, dtype=torch.float64)
    want = torch.stack([p.sum() for p in torch.split(v, lengths.tolist())])
    torch.testing.assert_close(reductions.segment_sum(v, lengths), want)
    with pytest.raises(ValueError, match="sum to len"):
        reductions.segment_sum(v, lengths + 1)


def test_transpose_against_indices():
    x = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    t = layout.transpose(x)
    assert t.is_contiguous() and t.shape == (4, 3)
    assert all(t[j, i] == x[i, j] for i in range(3) for j in range(4))


def test_spmv_and_spmm_against_dense():
    crow, col, val, dense = _random_csr(30, 25, 3, seed=8)
    g = _gen(9)
    x, b = torch.randn(25, generator=g, dtype=torch.float64), torch.randn(25, 6, generator=g, dtype=torch.float64)
    torch.testing.assert_close(sparse.spmv_csr(crow, col, val, x), dense @ x)
    torch.testing.assert_close(sparse.spmm_csr(crow, col, val, b), dense @ b)


def test_spmv_refuses_a_malformed_matrix():
    crow = torch.tensor([0, 2, 1])   # not monotone
    with pytest.raises(RuntimeError):
        sparse.spmv_csr(crow, torch.tensor([0, 1]), torch.ones(2, dtype=torch.float64), torch.ones(3, dtype=torch.float64))


def test_csr_transpose_against_dense_transpose():
    crow, col, val, dense = _random_csr(12, 17, 2, seed=10)
    tcrow, tcol, tval = sparse.csr_transpose(crow, col, val, 17)
    assert tcrow.numel() == 18 and tcol.numel() == val.numel()
    rebuilt = torch.zeros(17, 12, dtype=torch.float64)
    for r in range(17):
        cols_r = tcol[tcrow[r]:tcrow[r + 1]]
        assert torch.equal(cols_r, cols_r.sort().values)       # sorted within each row
        rebuilt[r, cols_r] = tval[tcrow[r]:tcrow[r + 1]]
    torch.testing.assert_close(rebuilt, dense.t())


@pytest.mark.parametrize("causal", [False, True])
def test_attention_against_torch_sdpa(causal):
    g = _gen(11)
    q, k, v = (torch.randn(2, 5, 8, generator=g, dtype=torch.float64) for _ in range(3))
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    torch.testing.assert_close(attention.attention(q, k, v, causal=causal), want)
