import math

import pytest
import torch


# Tests that need every core of this machine to themselves, marked `serial` (pyproject.toml):
# `make test` runs the others two at a time (pytest-xdist), then these alone.  A module, or one
# test of it, as "path::name".
SERIAL = (
    # a batch's slots each lease a core of their own (one named core each, not the first free)
    "integration/test_score_batch.py::test_batch_resumes_without_scoring_a_row_twice",
    "integration/test_score_batch.py::test_score_many_on_a_local_ray_instance",
    "integration/test_score_batch.py::test_a_candidate_cannot_forge_its_batch_record",
    "integration/test_score_batch.py::test_a_candidate_past_the_scores_deadline_is_its_verdict_not_a_retry",
    "integration/test_gpumode_cli.py::test_tasks_list_and_score_batch_take_problems",
    "integration/test_cli_golden.py::test_score_batch_exit_codes_and_json",
    "integration/test_killed_scorer.py::test_a_batch_row_killed_on_its_timeout_and_retried_leaves_nothing",
    "plugin/test_plugin_against.py",            # its own pytest -n 2 runs; pytest-benchmark, off under xdist
    # a second core to steal, or a task of two threads: what they measure is the other core
    "adversarial/test_exploits.py::test_extra_threads_held_to_the_tasks_cores_by_the_cpuset",
    "adversarial/test_exploits.py::test_extra_threads_rejected_where_there_is_no_cpuset",
    "adversarial/test_exploits.py::test_extra_threads_rejected_with_the_sandbox_off",
    "adversarial/test_exploits.py::test_a_second_core_borrowed_in_every_block_is_counted_with_the_sandbox_off",
)


def _is_serial(nodeid: str) -> bool:
    path, _, name = nodeid.removeprefix("tests/").partition("::")
    return any(entry == path or entry == f"{path}::{name.split('[')[0]}" for entry in SERIAL)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_serial(item.nodeid):
            item.add_marker(pytest.mark.serial)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; this machine has none")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def sandboxable():
    """Skips the test where this machine cannot set up every sandbox layer (not root, no
    util-linux, no cgroup): what is missing is the skip's reason."""
    from perfbench.isolation.sandbox.plan import plan_sandbox

    plan = plan_sandbox("probe", untrusted=True)
    plan.remove()
    if plan.missing:
        pytest.skip(f"this machine cannot sandbox: {plan.missing}")


@pytest.fixture
def fake_score():
    """A factory of scored ScoreResults whose speedup is known: `fake_score(2.0)` measured in one
    worker process, `fake_score(1.2, 1.5)` in two (six pairs each, spread +/-`jitter` around
    each process's speedup).  For what reads a score's result (calibration, selfcheck) without
    timing anything."""
    from perfbench.core.results import ComparisonResult, PairedSamples
    from perfbench.core.verdict import ScoreResult

    def make(*process_speedups: float, jitter: float = 0.01) -> ScoreResult:
        offsets = [jitter * (k - 2.5) / 2.5 for k in range(6)]
        base = tuple(s * 1e6 * math.exp(o) for s in process_speedups for o in offsets)
        labels = tuple(j for j in range(len(process_speedups)) for _ in offsets) if len(process_speedups) > 1 else ()
        samples = PairedSamples(base, (1e6,) * len(base), 1, "max_pairs", processes=labels)
        comparison = ComparisonResult("baseline.py", "candidate.py", "cpu", "fake", 7, samples, {}, {})
        return ScoreResult(task="t", task_kind="perf", candidate="candidate.py", device="cpu", verdict="scored",
                           reasons=(), checks=1, seed=7, comparison=comparison, s_ref=2.0)

    return make
