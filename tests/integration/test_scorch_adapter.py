"""Scorch itself (optional: `make scorch SCORCH_SRC=...`).  Skipped where it is not importable;
run where it is, each kernel compiles once (30-60 s) into torch's extensions cache."""
import importlib.util

import pytest

from perfbench.sparse.cases import SparseCase
from perfbench.sparse.compare import run_case
from perfbench.sparse.variants import COMPILE_ERROR, OK
from perfbench.timing.sampler import SamplerConfig

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("scorch") is None,
                                 reason="Scorch is not importable (optional: make scorch SCORCH_SRC=/path/to/clone)")]
QUICK = SamplerConfig(min_pairs=6, max_pairs=8, warmup_s=0.0, time_budget_s=0.5, n_resamples=200)

SCHEDULES = '''
from scorch.compiler.cin import ForAll, IndexVar, TensorVar
from scorch.compiler.scheduler import Scheduler


def cin(op, fmt, dtype):
    if op != "spmm" or fmt != "csr":
        return None
    i, j, k = IndexVar("i"), IndexVar("j"), IndexVar("k")
    C, A, B = (TensorVar("C", fmt="dd", dtype=dtype), TensorVar("A", fmt="ds", dtype=dtype),
               TensorVar("B", fmt="dd", dtype=dtype))
    C[i, k] = A[i, j] * B[j, k]
    return {ORDER}
'''
DEFAULT = "Scheduler.auto_schedule(ForAll(i, ForAll(j, ForAll(k, C._assignment))))"
IKJ = "ForAll(i, ForAll(k, ForAll(j, C._assignment)))"   # does not compile at Scorch b3b5d4b


def test_scorch_default_and_a_hand_schedule_pass_the_gate_and_an_uncompilable_one_is_named(tmp_path):
    (tmp_path / "default.py").write_text(SCHEDULES.replace("{ORDER}", DEFAULT))
    (tmp_path / "ikj.py").write_text(SCHEDULES.replace("{ORDER}", IKJ))
    case = SparseCase("spmm", "csr", 0.02, (256, 256, 32))
    r = run_case(case, ["scorch", f"scorch:{tmp_path / 'default.py'}", f"scorch:{tmp_path / 'ikj.py'}"],
                 baseline="torch-dense", sampler=QUICK, seed=1)
    status = {v.variant: v for v in r.variants}
    assert status["scorch"].status == OK and status[f"scorch:{tmp_path / 'default.py'}"].status == OK
    ikj = status[f"scorch:{tmp_path / 'ikj.py'}"]
    if ikj.status == COMPILE_ERROR:   # a later Scorch may compile it; then it must be correct
        assert ": error:" in ikj.detail
    else:
        assert ikj.status == OK


@pytest.mark.parametrize("op,fmt", [("spmspm", "csr"), ("sddmm", "csr"), ("spmv", "dcsr"),
                                    ("einsum:ij,jk,k->i", "dcsr")])
def test_every_op_and_format_goes_through_scorchs_compiler_and_passes_the_gate(op, fmt):
    r = run_case(SparseCase(op, fmt, 0.05, (256, 256, 32), pattern="empty_rows"), ["scorch"], baseline="torch-dense",
                 sampler=QUICK, seed=1)
    scorch = r.variants[1]
    assert (scorch.variant, scorch.status) == ("scorch", OK), scorch.detail
    assert scorch.speedup > 0 and scorch.compile_s is not None


def test_a_scorch_schedule_is_scored_in_the_full_sandbox_against_scorchs_default():
    """examples/scorch_spmm: a hand schedule as a perf task's candidate; the sandbox shows it
    Scorch's source tree ([sandbox] packages) and its kernel compiles in there."""
    from pathlib import Path

    from perfbench.pipeline.score import ScoreConfig, score

    task = Path(__file__).resolve().parents[2] / "examples" / "scorch_spmm"
    r = score(task, task / "solution.py", ScoreConfig(sampler=QUICK, processes=2, check_seeds=1))
    assert r.verdict == "scored", r.reasons
    assert r.isolation["missing"] == [] and r.comparison.speedup > 0
    assert any(Path(p, "csrc", "header.cpp").is_file() for p in r.isolation["details"]["exposed"])
