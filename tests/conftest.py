import math

import pytest
import torch


def pytest_collection_modifyitems(config, items):
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
