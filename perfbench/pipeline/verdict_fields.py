"""The verdict's fields that a score learns as it runs (the task and candidate, s_ref, then what
the worker processes found), typed, and the one place a ScoreResult is built from them."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..core.verdict import ScoreResult


@dataclass
class VerdictFields:
    task: str
    task_kind: str
    candidate: str
    device: str
    seed: int
    deadline_s: float | None
    overrides: dict[str, Any]
    s_ref: float | None
    s_ref_source: str
    warnings: list[str] = field(default_factory=list)        # each once, in the order found
    threading: dict[str, Any] = field(default_factory=dict)  # CPU: threads, cores, OpenMP policy
    isolation: dict[str, Any] = field(default_factory=dict)  # the candidate's sandbox, as process 0 saw it
    clock_control: dict[str, Any] = field(default_factory=dict)
    contract: dict[str, Any] = field(default_factory=dict)   # the gate's contract calls and the blocks since
    sol_inputs: dict[str, Any] = field(default_factory=dict)  # the call's work and the peaks (core/sol.py)

    def warn(self, *messages: str) -> None:
        self.warnings += [m for m in messages if m not in self.warnings]

    def result(self, **measured: Any) -> ScoreResult:
        """The verdict: these fields and what the timing measured (verdict, reasons, checks, ...)."""
        known = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return ScoreResult(**known | {"warnings": tuple(self.warnings)}, **measured)
