"""Behaviour every csr_transpose must have; `impl` is the implementation under test."""
import pytest
import torch


def _csr(dense: torch.Tensor) -> tuple:
    nz = dense.nonzero()
    crow = torch.zeros(dense.shape[0] + 1, dtype=torch.int64)
    crow[1:] = torch.cumsum(torch.bincount(nz[:, 0], minlength=dense.shape[0]), 0)
    return crow, nz[:, 1].contiguous(), dense[nz[:, 0], nz[:, 1]]


def _dense(crow, col, val, cols):
    out = torch.zeros(crow.numel() - 1, cols, dtype=val.dtype)
    for r in range(crow.numel() - 1):
        out[r, col[crow[r]:crow[r + 1]]] = val[crow[r]:crow[r + 1]]
    return out


def test_small_example(impl):
    a = torch.tensor([[1.0, 0.0, 2.0], [0.0, 3.0, 4.0]])
    tcrow, tcol, tval = impl(*_csr(a), 3)
    assert tcrow.tolist() == [0, 1, 2, 4]
    assert tcol.tolist() == [0, 1, 0, 1]
    assert tval.tolist() == [1.0, 3.0, 2.0, 4.0]


def test_trailing_empty_columns_keep_their_rows(impl):
    a = torch.tensor([[5.0, 0.0, 0.0, 0.0], [0.0, 6.0, 0.0, 0.0]])
    tcrow, tcol, tval = impl(*_csr(a), 4)
    assert tcrow.tolist() == [0, 1, 2, 2, 2]
    assert torch.equal(_dense(tcrow, tcol, tval, 2), a.t())


def test_empty_matrix(impl):
    crow = torch.zeros(4, dtype=torch.int64)
    tcrow, tcol, tval = impl(crow, torch.empty(0, dtype=torch.int64), torch.empty(0), 5)
    assert tcrow.tolist() == [0] * 6 and tcol.numel() == 0 and tval.numel() == 0


def test_columns_sorted_within_each_output_row(impl):
    g = torch.Generator().manual_seed(1)
    a = torch.randn(30, 20, generator=g) * (torch.rand(30, 20, generator=g) < 0.3)
    tcrow, tcol, _ = impl(*_csr(a), 20)
    for r in range(20):
        part = tcol[tcrow[r]:tcrow[r + 1]]
        assert torch.equal(part, part.sort().values)


def test_matches_dense_transpose_and_round_trips(impl):
    g = torch.Generator().manual_seed(2)
    a = torch.randn(25, 17, generator=g, dtype=torch.float64) * (torch.rand(25, 17, generator=g) < 0.2)
    a[:, -1] = 0
    t = impl(*_csr(a), 17)
    assert torch.equal(_dense(*t, 25), a.t())
    back = impl(*t, 25)
    assert [x.tolist() for x in back] == [x.tolist() for x in _csr(a)]
    assert t[0].dtype == t[1].dtype == torch.int64 and t[2].dtype == torch.float64


def test_out_of_range_column_is_an_error(impl):
    crow, col, val = torch.tensor([0, 1]), torch.tensor([3]), torch.tensor([1.0])
    with pytest.raises(ValueError):
        impl(crow, col, val, 3)
