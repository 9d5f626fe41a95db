"""Every shipped task: its files are right in-process (cheap, every task), its solution scores
faster through the whole pipeline, its starter earns 0, a wrong candidate is rejected."""
import dataclasses
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfbench.pipeline.gate import task_tolerance
from perfbench.pipeline.score import ScoreConfig, score
from perfbench.task.contract import contract_calls
from perfbench.task.correctness import check_outputs, record_of
from perfbench.task.program import TaskProgram
from perfbench.task.spec import load_task
from perfbench.task.user_files import load_module
from perfbench.timing.sampler import SamplerConfig

REPO = Path(__file__).resolve().parents[2]
ALL_TASKS = sorted(p.parent.name for p in (REPO / "tasks").glob("*/task.toml"))
SPECS = {n: load_task(REPO / "tasks" / n) for n in ALL_TASKS}
CPU_PERF = [n for n, s in SPECS.items() if s.kind == "perf" and s.device == "cpu"]
TRITON = [n for n, s in SPECS.items() if s.family == "triton"]
CFG = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=8, warmup_s=0.05), check_seeds=2, processes=2,
                  s_ref_policy="table")


def test_the_suite_covers_three_families_both_kinds_and_a_dozen_tasks():
    assert len(ALL_TASKS) >= 12
    assert {s.family for s in SPECS.values() if s.kind == "perf"} >= {"cpu-cpp", "triton", "cuda-cpp"}
    assert {s.kind for s in SPECS.values()} == {"perf", "impl"}
    for name, spec in SPECS.items():
        assert spec.name == name
        if spec.kind == "perf":
            assert len(spec.sizes) >= 2 and spec.timed_size in spec.sizes, name
            for role in ("inputs", "reference", "baseline", "solution", "starter"):
                assert spec.file(role).is_file(), (name, role)


def _check_roles(name: str, device: str, sizes: list[str]) -> None:
    """Each role right on the generator's draws of `sizes`, and under the task's input contract
    (#58 (6): every transform it declares, as the gate makes them, on the same sizes)."""
    spec = dataclasses.replace(SPECS[name], sizes=tuple(sizes))
    prog = TaskProgram(spec, device)
    tol = task_tolerance(spec)
    for role in ("solution", "baseline", "starter"):
        kernel = load_module(spec.file(role)).kernel
        for size in sizes:
            for seed in (1, 2):
                inputs = prog.make_inputs(seed, size)
                fails = check_outputs([record_of(kernel(*inputs), inputs)], prog.reference(inputs),
                                      prog.oracle(inputs), tol)
                assert not fails, (name, role, size, fails)
        tested = set()
        for call in contract_calls(prog, 3):
            assert call.skipped is None, (name, call)   # every shipped contract holds on its own draws
            fails = check_outputs([record_of(kernel(*call.inputs), call.inputs)], *call.expected, tol, call.atol_scale)
            assert not fails, (name, role, call.transform, call.size, fails)
            tested.add(call.transform)
        assert tested == set(spec.contract), (name, tested)


@pytest.mark.parametrize("task", CPU_PERF)
def test_cpu_task_solution_baseline_and_starter_match_the_reference_on_every_size(task):
    _check_roles(task, "cpu", list(SPECS[task].sizes))


# Real timing of every shipped solution and starter is a validation of the tasks (`perfbench
# validate`, `make validation`), not a test of perfbench: in every CI run stays csr_spmv's, the
# suite's honest C++-extension candidate through the whole pipeline.
IN_EVERY_RUN = {"csr_spmv"}


def _validation(tasks):
    return [t if t in IN_EVERY_RUN else pytest.param(t, marks=pytest.mark.validation) for t in tasks]


@pytest.mark.parametrize("task", _validation(CPU_PERF))
def test_solution_passes_and_is_faster(task):
    r = score(REPO / "tasks" / task, REPO / "tasks" / task / "solution.py", CFG)
    assert r.verdict == "scored", r.reasons
    # Real timing, so the margin is the defence against flakes: every CPU solution measures 3.5x
    # or more here (bench_configs/); the median of >= 6 pair ratios would have to lose a factor of
    # 3 to all the noise of one run (A/A noise on this VM: median 4%, worst of 12 runs 14%; the
    # worst seen anywhere, 0.42, was an in-process compare of 2 ms blocks in CI, 2026-12-03).
    assert r.comparison.speedup > 1.15           # genuinely faster than the baseline
    assert r.s_ref > 1.15
    # How close s lands to s_ref is a measurement on a noisy machine, not a test: it is checked
    # by `perfbench validate` / `calibrate` and quoted from runs, never asserted here.


@pytest.mark.parametrize("task", _validation(["row_softmax", "csr_spmm"]))
def test_starter_earns_nothing(task):
    r = score(REPO / "tasks" / task, REPO / "tasks" / task / "starter.py", CFG)
    assert r.verdict == "scored", r.reasons
    assert r.r_perf == 0.0


@pytest.mark.parametrize("task,reason", [("row_softmax", "correctness.mismatch"), ("csr_spmv", "correctness.mismatch"),
                                         ("small_gemm", "correctness.mismatch")])
def test_wrong_candidate_rejected(task, reason):
    r = score(REPO / "tasks" / task, REPO / "tests" / "fixtures" / "wrong" / f"{task}.py", CFG)
    assert [x.code for x in r.reasons] == [reason]


@pytest.mark.parametrize("task,passed", [("segment_sum", 4), ("csr_transpose", 2)])
def test_impl_task_scores_solution_and_starter(task, passed):
    sol = score(REPO / "tasks" / task, REPO / "tasks" / task / "solution.py")
    sta = score(REPO / "tasks" / task, REPO / "tasks" / task / "starter.py")
    total = len([line for f in (REPO / "tasks" / task / "tests").glob("test_*.py")
                 for line in f.read_text().splitlines() if line.startswith("def test_")])
    assert (sol.r_impl, sol.tests_passed, sol.tests_total) == (1.0, total, total)
    assert (sta.r_impl, sta.tests_passed, sta.tests_total) == (0.0, passed, total)


def test_triton_tasks_correct_under_interpreter():
    """Every Triton task's solution, baseline and starter on its `small` size, on the CPU with
    TRITON_INTERPRET=1 (set before triton loads), in one interpreter."""
    pytest.importorskip("triton")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / 'tests' / 'integration')!r})
        from test_shipped_tasks import _check_roles
        for name in {TRITON!r}:
            _check_roles(name, "cpu", ["small"])
        print("ok", len({TRITON!r}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TRITON_INTERPRET="1"))
    assert proc.returncode == 0 and proc.stdout.split() == ["ok", str(len(TRITON))], proc.stderr[-2000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("source", sorted(p.name for p in (REPO / "kernels" / "cuda").glob("*.cu")))
def test_cuda_kernel_sources_compile_with_nvcc(source, tmp_path):
    """The CUDA tasks run only on a GPU; here their kernels are at least compiled for Hopper."""
    proc = subprocess.run(["nvcc", "-arch=sm_90", "-Werror", "all-warnings", "-c", "-o", str(tmp_path / "k.o"),
                           str(REPO / "kernels" / "cuda" / source)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
