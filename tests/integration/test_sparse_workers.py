"""Sparse variants in their own worker processes (what two Scorch checkouts get), tested with
PyTorch's variants and a `py:FILE` one so that it runs without Scorch: prepare and gate in the
worker, blocks paired AB-BA across processes, a wrong variant rejected by name while the
comparison still reports the other side."""
import os

from perfbench.sparse.cases import SparseCase
from perfbench.sparse.compare import NO_BASELINE, WorkerSpec, run_case_workers
from perfbench.sparse.variants import INCORRECT, NOT_APPLICABLE, OK
from perfbench.timing.sampler import SamplerConfig

QUICK = SamplerConfig(min_pairs=6, max_pairs=12, warmup_s=0.0, time_budget_s=0.5, n_resamples=200)
CASE = SparseCase("spmm", "csr", 0.02, (256, 256, 32), seed=5)

OFF_BY_ONE_PERCENT = '''
import torch

def prepare(op, fmt, operands):
    if op != "spmm":
        return None
    a, b = operands["A"].to_sparse_csr(), operands["B"]
    return lambda: torch.sparse.mm(a, b) * 1.01
'''


def test_two_workers_pair_their_blocks_across_processes():
    env = dict(os.environ)
    r = run_case_workers(CASE, (WorkerSpec("dense", "torch-dense", env), WorkerSpec("sparse", "torch-sparse", env)),
                         sampler=QUICK, seed=1, threads=1, processes=2)
    base, cand = r.variants
    assert (base.variant, base.status, cand.variant, cand.status) == ("dense", OK, "sparse", OK)
    assert cand.speedup > 1.5 and cand.ci[0] <= cand.speedup <= cand.ci[1]   # 2% dense: sparse wins clearly
    assert base.median_ns > cand.median_ns > 0


def test_a_wrong_variant_in_a_worker_is_named_and_an_inapplicable_one_said(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text(OFF_BY_ONE_PERCENT)
    env = dict(os.environ)
    r = run_case_workers(CASE, (WorkerSpec("torch", "torch-dense", env), WorkerSpec("mine", f"py:{wrong}", env)),
                         sampler=QUICK, seed=1, threads=1, processes=2)
    assert [v.status for v in r.variants] == [OK, INCORRECT]
    assert r.variants[1].detail.startswith("spmm csr d=0.02 256x256x32 uniform: max abs error")
    spmv = SparseCase("spmv", "csr", 0.02, (256, 256, 32))
    r = run_case_workers(spmv, (WorkerSpec("mine", f"py:{wrong}", env), WorkerSpec("torch", "torch-dense", env)),
                         sampler=QUICK, seed=1, threads=1, processes=1)
    assert [v.status for v in r.variants] == [NOT_APPLICABLE, NO_BASELINE]
    assert r.variants[0].detail == f"py:{wrong} has no spmv on csr"
