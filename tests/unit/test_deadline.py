"""core/deadline.py: the whole score's deadline (#58 (3)), on a fake clock."""
import pytest

from perfbench.core.deadline import Deadline, default_seconds
from perfbench.core.errors import CandidateRejected
from perfbench.pipeline.config import ScoreConfig


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_request_waits_its_own_timeout_until_the_deadline_is_nearer():
    clock = Clock()
    d = Deadline.start(30.0, clock)
    assert d.bound(20.0) == (20.0, False)
    clock.now += 15
    assert d.bound(20.0) == (15.0, True) and d.remaining() == 15.0 and not d.passed()
    clock.now += 15
    assert d.bound(20.0) == (0.0, True) and d.passed()
    clock.now += 5
    assert d.remaining() == 0.0


def test_past_it_the_candidate_is_rejected_as_a_timeout_naming_the_deadline():
    exc = Deadline.start(480.0, Clock()).exceeded("candidate's 'stage'")
    assert isinstance(exc, CandidateRejected) and exc.reason == "candidate.timeout"
    assert exc.message == "the score's deadline (480 s, --deadline) passed during candidate's 'stage'"


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan")])
def test_a_deadline_is_a_positive_finite_time(bad):
    with pytest.raises(ValueError, match="a deadline is a positive number of seconds"):
        Deadline.start(bad, Clock())
    with pytest.raises(ValueError, match="deadline must be a positive number of seconds"):
        ScoreConfig(deadline_s=bad)


def test_the_default_is_one_load_and_four_budgets_and_a_minute_per_timed_size():
    assert default_seconds(300.0, 30.0, 1) == 300 + 4 * 30 + 60 == 480
    assert default_seconds(300.0, 30.0, 0) == 480          # a task without benchmarks times one size
    assert default_seconds(300.0, 30.0, 5) == 300 + 5 * 180  # GPU MODE: each benchmark timed on its own
