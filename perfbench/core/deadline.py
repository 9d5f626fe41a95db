"""The deadline of a whole score (#58 (3)).

Each request to a worker has its own timeout, but a candidate can stay under every one of them
(a STAGE that sleeps 50 s, in every gate call) and hold the scorer for as long as it likes.
The deadline bounds the whole score: every request to the candidate's worker waits at most
until it, and a request that reaches it is the candidate's timeout (`candidate.timeout`, a
verdict, so score-batch never retries it as the machine's failure).  The baseline's requests
are not bounded by it: they are trusted, and the next request to the candidate ends the score.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from .errors import CandidateRejected

# The default deadline (`default_seconds`) gives each timed size this many times its time
# budget, plus this much for starting its workers and the gate; and loading once more.
BUDGET_FACTOR = 4
PER_TIMED_SIZE_S = 60.0


def default_seconds(load_timeout_s: float, time_budget_s: float, timed_sizes: int) -> float:
    """A score's deadline when none is given: one load that may compile (`load_timeout_s`),
    then per timed size (GPU MODE times each benchmark) 4x its time budget and 60 s.  An honest
    CPU score here takes 20-60 s against the 480 s this gives with the defaults."""
    return load_timeout_s + max(1, timed_sizes) * (BUDGET_FACTOR * time_budget_s + PER_TIMED_SIZE_S)


@dataclass(frozen=True)
class Deadline:
    """`seconds` from when it was started, on `clock` (monotonic seconds)."""
    seconds: float
    ends_at: float
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.seconds, (int, float)) and math.isfinite(self.seconds) and self.seconds > 0):
            raise ValueError(f"a deadline is a positive number of seconds, not {self.seconds!r}")

    @classmethod
    def start(cls, seconds: float, clock: Callable[[], float] = time.monotonic) -> "Deadline":
        return cls(seconds, clock() + seconds, clock)

    def remaining(self) -> float:
        return max(0.0, self.ends_at - self.clock())

    def passed(self) -> bool:
        return self.remaining() <= 0.0

    def bound(self, timeout_s: float) -> tuple[float, bool]:
        """A request's timeout within the deadline, and whether the deadline is what limits it."""
        left = self.remaining()
        return (left, True) if left < timeout_s else (timeout_s, False)

    def exceeded(self, during: str) -> CandidateRejected:
        return CandidateRejected("candidate.timeout", f"the score's deadline ({self.seconds:g} s, --deadline) "
                                 f"passed during {during}")
