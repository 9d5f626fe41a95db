"""Behaviour every segment_sum must have; `impl` is the implementation under test."""
import pytest
import torch


def test_basic(impl):
    v = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    assert torch.equal(impl(v, torch.tensor([2, 3])), torch.tensor([3.0, 12.0]))


def test_empty_segment(impl):
    v = torch.tensor([1.0, 2.0, 3.0])
    assert torch.equal(impl(v, torch.tensor([1, 0, 2])), torch.tensor([1.0, 0.0, 5.0]))


def test_no_segments(impl):
    assert impl(torch.empty(0), torch.empty(0, dtype=torch.int64)).numel() == 0


def test_dtype_preserved(impl):
    v = torch.arange(6, dtype=torch.float64)
    assert impl(v, torch.tensor([3, 3])).dtype == torch.float64


def test_matches_loop_on_random(impl):
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(0, 5, (50,), generator=g)
    v = torch.randn(int(lengths.sum()), generator=g)
    expect = torch.stack([s.sum() for s in torch.split(v, lengths.tolist())])
    torch.testing.assert_close(impl(v, lengths), expect, rtol=1e-5, atol=1e-6)


def test_rejects_bad_lengths(impl):
    with pytest.raises(ValueError):
        impl(torch.ones(3), torch.tensor([1, 1]))
