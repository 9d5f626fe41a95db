"""task/contract.py: a task's input contract, parsed and applied (#58 (6))."""
import math

import pytest
import torch

from perfbench.core.errors import UsageError
from perfbench.task.contract import STANDARD, Transform, all_finite, output_scale, parse_contract, transformed


def test_each_transform_changes_only_floating_tensors_of_the_chosen_arguments():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    idx = torch.tensor([0, 2])
    w = torch.tensor([0.5, 0.25])
    assert torch.equal(transformed((x, idx, w), "scale:100")[0], x * 100)
    assert torch.equal(transformed((x, idx, w), "scale:100")[2], w * 100)
    assert transformed((x, idx, w), "scale:100")[1] is idx           # integers: never
    assert torch.equal(transformed((x, idx, w), "shift:-100")[0], x - 100)
    rows = transformed((x, 3, w), "constant_rows")
    assert torch.equal(rows[0], torch.tensor([[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]])) and rows[1] == 3
    only_x = transformed((x, idx, w), "shift:100", args=[0])
    assert torch.equal(only_x[0], x + 100) and only_x[2] is w


def test_a_transform_keeps_shape_dtype_and_layout():
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)).to(torch.float16)
    for t in (*STANDARD, "constant_rows"):
        y = transformed((x,), t)[0]
        assert (y.shape, y.dtype, y.is_contiguous()) == (x.shape, x.dtype, True)
    assert transformed((x,), "shift:1")[0] is not x   # a new tensor: the drawn inputs stay as they are


@pytest.mark.parametrize("text", ["scale:0", "scale:inf", "shift:nan", "scale", "shift:x", "flip", "constant_rows:2"])
def test_a_bad_transform_is_one_line_naming_it(text):
    with pytest.raises(UsageError, match=f"transform {text!r} is not one of scale:K"):
        Transform.parse(text)


def test_transforms_print_as_they_parse():
    assert [str(Transform.parse(t)) for t in ("scale:100", "scale:1e-2", "shift:-100.0", "constant_rows")] == [
        "scale:100", "scale:0.01", "shift:-100", "constant_rows"]


def test_task_toml_contract_section():
    assert parse_contract(None, "t.toml") == (None, None)   # declared nothing: the gate uses STANDARD
    assert parse_contract({}, "t.toml") == (STANDARD, None)
    assert parse_contract({"transforms": []}, "t.toml") == ((), None)
    assert parse_contract({"transforms": ["scale:1e3", "constant_rows"], "args": [0, 2]}, "t.toml") == (
        ("scale:1000", "constant_rows"), (0, 2))
    for bad, needle in (({"transforms": "scale:2"}, "transforms must be a list"),
                        ({"args": [-1]}, "args must be a list of argument indices"),
                        ({"args": [True]}, "args must be a list of argument indices"),
                        ({"transform": []}, "unknown field 'transform'"),
                        ({"transforms": ["scale:0"]}, "transform 'scale:0'")):
        with pytest.raises(UsageError, match=needle):
            parse_contract(bad, "t.toml")


def test_the_output_scale_widens_atol_only_for_larger_outputs():
    usual = [torch.tensor([1.0, -2.0]), torch.tensor([3], dtype=torch.int64)]
    assert output_scale([torch.tensor([100.0, -200.0]), torch.tensor([3])], usual) == pytest.approx(100.0)
    assert output_scale([torch.tensor([0.01, 0.02])], usual) == 1.0          # never narrower
    assert output_scale([torch.tensor([5.0])], [torch.zeros(1)]) == 1.0      # nothing to compare with
    assert output_scale([torch.tensor([math.inf])], usual) == 1.0


def test_all_finite_reads_floating_tensors_only():
    assert all_finite([torch.ones(2), torch.tensor([1], dtype=torch.int64), 3.0])
    assert not all_finite([torch.tensor([1.0, math.nan])]) and not all_finite([torch.tensor([math.inf])])
