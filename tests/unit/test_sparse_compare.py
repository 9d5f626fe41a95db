"""Sparse comparisons without Scorch: the case generator, the dense gate, and a wrong or
inapplicable variant reported while the others still complete.  (Scorch itself: tests skip
where it is not importable; see test_scorch_adapter.)"""
import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from perfbench.cli.main import main
from perfbench.cli.scorch import _ops, result_lines
from perfbench.sparse import variants as variants_mod
from perfbench.sparse.cases import CaseError, SparseCase, operands, output_shape, reference, sparsity_mask
from perfbench.sparse.compare import INCORRECT, NO_BASELINE, NOT_APPLICABLE, OK, CaseResult, VariantResult, run_case
from perfbench.timing.sampler import SamplerConfig

QUICK = SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, time_budget_s=0.2, n_resamples=200)


@pytest.mark.parametrize("pattern", ["uniform", "power_law", "banded", "empty_rows"])
def test_each_pattern_hits_its_density_and_has_its_shape(pattern):
    mask = sparsity_mask(400, 300, 0.02, pattern, np.random.default_rng(1))
    assert mask.shape == (400, 300)
    assert 0.015 < mask.mean() < 0.03, mask.mean()
    rows = mask.sum(axis=1)
    if pattern == "empty_rows":
        assert 0.3 < (rows == 0).mean() < 0.7           # about half the rows hold nothing
    if pattern == "power_law":
        assert rows.max() > 10 * max(np.median(rows), 1)   # a few long rows
    if pattern == "banded":
        i, j = np.nonzero(mask)
        assert np.abs(j - (i * 300) // 400).max() <= 4   # all within the band


def test_operands_are_seeded_and_only_the_sparse_ones_are_sparse():
    case = SparseCase("spmm", "csr", 0.05, (64, 48, 8), seed=3)
    a, b = operands(case), operands(case)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert (a["A"] != 0).float().mean() < 0.08 and (a["B"] != 0).all()
    assert not torch.equal(operands(SparseCase("spmm", "csr", 0.05, (64, 48, 8), seed=4))["A"], a["A"])


@pytest.mark.parametrize("op", ["spmv", "spmm", "spmspm", "sddmm"])
def test_the_reference_agrees_with_an_independent_formulation(op):
    case = SparseCase(op, "csr", 0.1, (40, 30, 20), seed=2)
    ops = operands(case)
    ref = reference(case, ops)
    d = {k: v.to(torch.float64).numpy() for k, v in ops.items()}
    # numpy's einsum, not torch's matmul
    expected = {"spmv": lambda: np.einsum("ij,j->i", d["A"], d["x"]),
                "spmm": lambda: np.einsum("ij,jk->ik", d["A"], d["B"]),
                "spmspm": lambda: np.einsum("ij,jk->ik", d["A"], d["B"]),
                "sddmm": lambda: np.einsum("ik,ij,jk->ik", d["S"], d["A"], d["B"])}[op]()
    np.testing.assert_allclose(ref.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("field,value,message", [("op", "spmx", "op 'spmx'"), ("fmt", "bsr", "format 'bsr'"),
                                                 ("density", 0.0, "density 0.0"), ("pattern", "zipf", "pattern 'zipf'")])
def test_a_bad_case_names_its_field(field, value, message):
    kwargs = dict(op="spmv", fmt="csr", density=0.1)
    with pytest.raises(CaseError, match=message):
        SparseCase(**{**kwargs, field: value})


@pytest.mark.parametrize("op,fmt", [("spmv", "csr"), ("spmm", "coo"), ("spmspm", "csr"), ("sddmm", "csr")])
def test_every_torch_variant_passes_the_gate(op, fmt):
    r = run_case(SparseCase(op, fmt, 0.05, (64, 64, 16)), ["torch-sparse"], baseline="torch-dense", sampler=QUICK, seed=1)
    assert [(v.variant, v.status) for v in r.variants] == [("torch-dense", OK), ("torch-sparse", OK)]
    assert r.variants[1].speedup > 0 and r.variants[1].ci[0] <= r.variants[1].speedup <= r.variants[1].ci[1]


def test_a_wrong_variant_is_rejected_by_name_and_the_rest_still_run(monkeypatch):
    real = variants_mod._sparse_fn

    def off_by_a_bit(op, d):
        fn = real(op, d)
        return lambda: fn() * 1.01
    monkeypatch.setattr(variants_mod, "_sparse_fn", off_by_a_bit)
    cases = [SparseCase("spmv", "csr", 0.05, (64, 64, 16)), SparseCase("spmv", "dense", 0.05, (64, 64, 16))]
    wrong, dense = (run_case(c, ["torch-sparse"], baseline="torch-dense", sampler=QUICK, seed=1) for c in cases)
    assert wrong.variants[1].status == INCORRECT
    assert wrong.variants[1].detail.startswith("spmv csr d=0.05 64x64 uniform: max abs error")
    assert dense.variants[1].status == NOT_APPLICABLE and dense.variants[0].status == OK
    broken_base = run_case(cases[0], ["torch-dense"], baseline="torch-sparse", sampler=QUICK, seed=1)
    assert [v.status for v in broken_base.variants] == [INCORRECT, NO_BASELINE]


def test_the_table_is_exact():
    case = SparseCase("spmv", "csr", 0.01, (2048, 2048, 64))
    r = CaseResult(case, "torch-dense", (VariantResult("torch-dense", OK, "", 0.0, 2.0e6, 1.0),
                                         VariantResult("scorch", OK, "", 41.5, 0.5e6, 4.0, (3.9, 4.1), 1e-9),
                                         VariantResult("torch-sparse", "compile_error", "error: boom")))
    assert result_lines([r]) == [
        "spmv csr d=0.01 2048x2048 uniform  (baseline torch-dense)",
        "  variant       compile  median    speedup  95% CI        p      status",
        "  torch-dense   0.00 s   2.000 ms  1.00x    -             -      ok",
        "  scorch        41.50 s  0.500 ms  4.00x    [3.90, 4.10]  1e-09  ok",
        "  torch-sparse  -        -         -        -             -      compile_error: error: boom",
        "geometric mean speedup of scorch: 4.00x over 1 case(s)"]


def test_cli_usage_errors_are_one_line(tmp_path):
    runner = CliRunner()
    bad_variant = runner.invoke(main, ["scorch", "compare", "--variants", "cusparse"])
    assert bad_variant.exit_code == 2 and "unknown variant 'cusparse'" in bad_variant.output
    bad_shape = runner.invoke(main, ["scorch", "compare", "--shape", "12", "--variants", "torch-sparse"])
    assert bad_shape.exit_code == 2 and "--shape '12': expected M,K[,N]" in bad_shape.output
    out = tmp_path / "r.json"
    ok = runner.invoke(main, ["scorch", "compare", "--ops", "spmv", "--shape", "64,64", "--variants", "torch-sparse",
                              "--budget", "0.2", "--quiet", "--out", str(out)])
    assert ok.exit_code == 0, ok.output
    assert "  torch-sparse" in ok.output and json.loads(out.read_text())["schema"] == 1
    # --json: the same document on stdout, as `perfbench score --json` prints its verdict (#40)
    as_json = runner.invoke(main, ["scorch", "compare", "--ops", "spmv", "--shape", "64,64", "--variants",
                                   "torch-sparse", "--budget", "0.2", "--quiet", "--json"])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.output)
    assert doc["schema"] == 1 and [r["case"]["op"] for r in doc["results"]] == ["spmv"], doc


def test_without_scorch_asking_for_it_is_one_line(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_scorch(name, *a, **k):
        if name == "scorch":
            raise ImportError("No module named 'scorch'")
        return real_import(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_scorch)
    result = CliRunner().invoke(main, ["scorch", "compare", "--ops", "spmv"])
    assert result.exit_code == 2
    assert "Scorch is not importable" in result.output and "make scorch SCORCH_SRC=" in result.output


def test_a_compile_error_is_reported_by_the_compilers_first_diagnostic():
    from perfbench.adapters.scorch import first_error_line
    log = ("Error building extension 'kernel_1': [1/2] c++ -O3 -c main.cpp -o main.o\n"
           "main.cpp: In function 'evaluate':\n"
           "main.cpp:602:19: error: 'pB0' was not declared in this scope\n"
           "main.cpp:700:1: error: expected '}'\n")
    assert first_error_line(log) == "main.cpp:602:19: error: 'pB0' was not declared in this scope"
    assert first_error_line("ImportError: no module\n") == "ImportError: no module"


def test_an_einsum_case_sizes_its_operands_by_index_and_its_reference_is_numpys():
    case = SparseCase("einsum:ij,jk,k->i", "csr", 0.2, (30, 20, 10), seed=5)
    ops = operands(case)
    assert {k: tuple(v.shape) for k, v in ops.items()} == {"A": (30, 20), "B": (20, 10), "C": (10,)}
    assert (ops["A"] != 0).float().mean() < 0.3 and (ops["B"] != 0).all()   # only the first is sparse
    d = [v.to(torch.float64).numpy() for v in ops.values()]
    np.testing.assert_allclose(reference(case, ops).numpy(), np.einsum("ij,jk,k->i", *d), rtol=1e-12, atol=1e-12)
    assert case.reduction_length == 20 * 10 and output_shape(case) == (30,)
    assert case.label == "einsum:ij,jk,k->i csr d=0.2 i=30,j=20,k=10 uniform"


def test_the_named_ops_sum_over_k_and_keep_their_operands():
    for op, shapes in [("spmv", {"A": (30, 20), "x": (20,)}), ("sddmm", {"S": (30, 10), "A": (30, 20), "B": (20, 10)})]:
        case = SparseCase(op, "csr", 0.2, (30, 20, 10))
        assert {k: tuple(v.shape) for k, v in operands(case).items()} == shapes and case.reduction_length == 20


@pytest.mark.parametrize("expr,message", [("ij,jk", "INPUTS->OUTPUT"), ("ij,jk->", "INPUTS->OUTPUT"),
                                          ("iJ,jk->ik", "lower-case"), ("ii,ik->ik", "lower-case"),
                                          ("ij,jk,kl->il", "at most three"), ("ij,jk->im", "not in any input"),
                                          ("i,ij->j", "must be a matrix")])
def test_a_bad_einsum_expression_says_what_is_wrong(expr, message):
    with pytest.raises(CaseError, match=message):
        SparseCase(f"einsum:{expr}", "csr", 0.1)


def test_einsum_runs_on_dense_torch_and_is_not_applicable_to_torch_sparse():
    r = run_case(SparseCase("einsum:ij,jk->ik", "csr", 0.05, (48, 32, 8)), ["torch-sparse"], baseline="torch-dense",
                 sampler=QUICK, seed=1)
    assert [(v.variant, v.status) for v in r.variants] == [("torch-dense", OK), ("torch-sparse", NOT_APPLICABLE)]
    assert "no general einsum" in r.variants[1].detail


def test_ops_keep_the_commas_of_an_einsum_expression():
    assert _ops("spmv,einsum:ij,jk->ik,spmm") == ["spmv", "einsum:ij,jk->ik", "spmm"]
    assert _ops("einsum:ij,jk,k->i") == ["einsum:ij,jk,k->i"]


def test_a_bad_einsum_on_the_command_line_is_one_line():
    r = CliRunner().invoke(main, ["scorch", "compare", "--ops", "einsum:ij,jk", "--variants", "torch-sparse"])
    assert r.exit_code == 2 and "INPUTS->OUTPUT" in r.output
