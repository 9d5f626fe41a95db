"""`validate(task)`: the task validity gates, measured on this machine.

perf: the solution passes the gate and beats the baseline by s_ref >= 1.15 (CI low end too),
the same in every worker process (not `unstable`); the starter does not beat the baseline.
impl: >= 5 tests, the solution passes all, the starter
fails at least one.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..core.verdict import VERDICT_REJECTED, ScoreResult
from ..core.scoring import (GateResult, gate_impl_tests, gate_s_ref, gate_stable, gate_starter_not_faster,
                            unreachable_reward)
from ..task.impl_tests import count_tests
from ..task.spec import load_task, require_solution
from .score import ScoreConfig, score


@dataclass(frozen=True)
class ValidationReport:
    task: str
    gates: tuple[GateResult, ...]
    runs: dict[str, ScoreResult]   # "solution" / "starter" -> its score
    warnings: tuple[str, ...] = ()   # said, not failed (e.g. a reward physics rules out)

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.gates)

    @property
    def measured_s_ref(self) -> float | None:
        sol = self.runs.get("solution")
        return sol.comparison.speedup if sol is not None and sol.comparison is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "ok": self.ok, "measured_s_ref": self.measured_s_ref,
                "gates": [{"name": g.name, "ok": g.ok, "detail": g.detail} for g in self.gates],
                "warnings": list(self.warnings),
                "runs": {k: r.to_dict() for k, r in self.runs.items()}}


def _rejected(name: str, r: ScoreResult) -> GateResult:
    why = "; ".join(f"{x.code}: {x.message}" for x in r.reasons)
    return GateResult(name, False, f"rejected by the correctness gate ({why})")


def validate(task: str | Path, config: ScoreConfig | None = None,
             log: Callable[[str], None] | None = None) -> ValidationReport:
    cfg = config or ScoreConfig()
    spec = require_solution(load_task(task), "validate")
    say = log or (lambda msg: None)
    runs: dict[str, ScoreResult] = {}
    for role in ("solution", "starter"):
        if spec.file(role).is_file():
            say(f"scoring the {role}")
            # s_ref must not come from the table being validated: any value > 1 works here.
            runs[role] = score(spec, spec.file(role), _with_s_ref(cfg), log=say)
    if spec.kind == "impl":
        n = count_tests(spec.tests_dir)
        sol, sta = runs.get("solution"), runs.get("starter")
        gates = gate_impl_tests(n, sol.tests_passed if sol else 0, sta.tests_passed if sta else 0)
        if sta is None:
            gates[-1] = GateResult("starter_fails_one", False, "no starter.py")
        return ValidationReport(spec.name, tuple(gates), runs)
    gates = []
    sol = runs["solution"]
    if sol.verdict == VERDICT_REJECTED:
        gates.append(_rejected("solution_correct", sol))
    else:
        gates.append(GateResult("solution_correct", True, f"{sol.checks} output checks passed"))
        gates.append(gate_s_ref(sol.comparison.speedup, sol.comparison.ci[0]))
        gates.append(gate_stable(sol.comparison.summary.stability, sol.comparison.speedup))
    sta = runs.get("starter")
    if sta is None:
        gates.append(GateResult("starter_not_faster", True, "no starter.py (nothing to check)"))
    elif sta.verdict == VERDICT_REJECTED:
        gates.append(_rejected("starter_correct", sta))
    else:
        s_solution = sol.comparison.speedup if sol.verdict != VERDICT_REJECTED else None
        gates.append(gate_starter_not_faster(sta.comparison.speedup, sta.comparison.ci[0], s_solution))
    sol_section = sol.sol if sol.verdict != VERDICT_REJECTED else None
    unreachable = unreachable_reward(sol.comparison.speedup, sol_section["headroom"]) if sol_section else None
    return ValidationReport(spec.name, tuple(gates), runs, (unreachable,) if unreachable else ())


def _with_s_ref(cfg: ScoreConfig) -> ScoreConfig:
    # Every process measures: a validity gate reads the CI itself, not a reward decided early.
    return dataclasses.replace(cfg, s_ref=cfg.s_ref if cfg.s_ref is not None else 2.0, stop_early=False)
