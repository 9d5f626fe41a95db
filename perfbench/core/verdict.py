"""The verdict on one candidate: ScoreResult (and its reasons, and a problem's per-benchmark
comparisons), frozen, validated on construction, JSON round-trippable as the comparison records
of results.py are, under the same schema version."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import sol, stats
from .results import READABLE_SCHEMAS, SCHEMA_VERSION, ComparisonResult, SchemaError
from .version import __version__


@dataclass(frozen=True)
class Reason:
    """Why a candidate was rejected (or a warning about the measurement): code + explanation."""

    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class BenchmarkComparison:
    """One benchmark of a problem with several (GPU MODE's `benchmarks:`): its name, the
    generate_input arguments it was timed on (the seed drawn secretly, not the one shown) and
    its own comparison."""

    name: str
    spec: dict[str, Any]
    comparison: ComparisonResult
    sol_inputs: dict[str, Any] = field(default_factory=dict)   # {"work", "peaks"} at this benchmark's size

    @property
    def sol(self) -> dict[str, Any] | None:
        return sol.section_of(self.sol_inputs, self.comparison)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "spec": dict(self.spec), "speedup": self.comparison.speedup,
                "ci": list(self.comparison.ci), "comparison": self.comparison.to_dict(), "sol": self.sol}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BenchmarkComparison":
        return cls(d["name"], dict(d["spec"]), ComparisonResult.from_dict(d["comparison"]),
                   {k: d["sol"][k] for k in ("work", "peaks")} if d.get("sol") else {})


VERDICT_SCORED = "scored"
VERDICT_REJECTED = "rejected"
# s_ref_source of a score whose s_ref is the solution's speedup in the same run (--s-ref live)
S_REF_LIVE = "live"


@dataclass(frozen=True)
class ScoreResult:
    """The verdict on one candidate for one task.

    `verdict` is "scored" (passed the gate; rewards computed) or "rejected" (score 0, `reasons`
    say why).  For perf tasks the speedup comes from `comparison`; `r_perf` is derived from it
    and `s_ref`.  `seeds` are the secret seeds drawn for this run, recorded after the fact.
    """

    task: str
    task_kind: str
    candidate: str
    device: str
    verdict: str
    reasons: tuple[Reason, ...]
    checks: int                           # output checks that ran (sizes x seeds + timed samples)
    seed: int
    comparison: ComparisonResult | None = None
    s_ref: float | None = None
    s_ref_source: str = ""
    tests_passed: int | None = None
    tests_total: int | None = None
    warnings: tuple[str, ...] = ()
    overrides: dict[str, Any] = field(default_factory=dict)
    worker_logs: dict[str, str] = field(default_factory=dict)
    clock_control: dict[str, Any] = field(default_factory=dict)  # policy, status, target, reason
    isolation: dict[str, Any] = field(default_factory=dict)  # sandbox layers around the candidate
    threading: dict[str, Any] = field(default_factory=dict)  # CPU: threads, cores, OpenMP wait policy
    benchmarks: tuple[BenchmarkComparison, ...] = ()   # GPU MODE: one comparison per benchmark
    deadline_s: float | None = None   # the whole score's deadline (core/deadline.py); None: none set
    contract: dict[str, Any] = field(default_factory=dict)   # the gate's input-contract calls (task/contract.py)
    sol_inputs: dict[str, Any] = field(default_factory=dict)   # {"work", "peaks"}: what `sol` is computed from
    perfbench_version: str = __version__
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.verdict not in (VERDICT_SCORED, VERDICT_REJECTED):
            raise ValueError(f"verdict must be scored or rejected, got {self.verdict!r}")
        if self.verdict == VERDICT_REJECTED and not self.reasons:
            raise ValueError("a rejection needs at least one reason")
        if self.verdict == VERDICT_SCORED and self.task_kind == "perf" and self.comparison is None and not self.benchmarks:
            raise ValueError("a scored perf result needs a comparison")
        if self.deadline_s is not None and not 0 < self.deadline_s < float("inf"):
            raise ValueError(f"deadline_s must be a positive number of seconds, got {self.deadline_s!r}")
        if self.comparison is not None and self.benchmarks:
            raise ValueError("one comparison, or one per benchmark, not both")
        if self.s_ref_source == S_REF_LIVE:   # derived from the samples, like every statistic
            if self.verdict == VERDICT_SCORED and (self.comparison is None or self.comparison.solution is None):
                raise ValueError("a live s_ref needs the solution's samples")
            live = self.comparison.solution_summary if self.comparison is not None else None
            object.__setattr__(self, "s_ref", live.speedup.value if live is not None else None)

    @property
    def r_perf(self) -> float | None:
        from .scoring import r_perf

        if self.task_kind != "perf":
            return None
        if self.verdict == VERDICT_REJECTED:
            return 0.0
        if self.s_ref is None:   # a KernelBench problem nobody calibrated: the speedup is the answer
            return None
        if self.s_ref <= 1.0:    # live: the solution did not beat the baseline here (a warning says so)
            return None
        return r_perf(self.speedup.value, self.s_ref)

    @property
    def speedup(self) -> stats.Estimate | None:
        """The candidate's speedup with its CI: the comparison's, or the geometric mean of the
        benchmarks' (GPU MODE); None when not timed."""
        if self.benchmarks:
            return stats.geometric_mean([b.comparison.summary.speedup for b in self.benchmarks])
        return self.comparison.summary.speedup if self.comparison is not None else None

    @property
    def live_s_ref(self) -> dict[str, Any] | None:
        """--s-ref live: the solution's speedup (s_ref) and the candidate's over the solution, each
        with its CI; None otherwise."""
        c = self.comparison
        if c is None or c.solution is None:
            return None
        sol, ratio = c.solution_summary.speedup, c.versus_solution
        return {"solution_speedup": sol.value, "solution_ci": [sol.low, sol.high],
                "candidate_over_solution": ratio.value, "ratio_ci": [ratio.low, ratio.high]}

    @property
    def r_impl(self) -> float | None:
        from .scoring import r_impl

        if self.task_kind != "impl":
            return None
        if self.verdict == VERDICT_REJECTED or not self.tests_total:
            return 0.0
        return r_impl(self.tests_passed or 0, self.tests_total)

    @property
    def reward(self) -> float | None:
        return self.r_perf if self.task_kind == "perf" else self.r_impl

    def to_dict(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "schema_version": self.schema_version, "perfbench_version": self.perfbench_version,
            "task": self.task, "task_kind": self.task_kind, "candidate": self.candidate,
            "device": self.device, "verdict": self.verdict,
            "reasons": [r.to_dict() for r in self.reasons], "checks": self.checks, "seed": self.seed,
            "speedup": self.speedup.value if self.speedup else None,
            "ci": [self.speedup.low, self.speedup.high] if self.speedup else None,
            "p_value": c.p_value if c else None,   # (per benchmark, in benchmarks[].comparison, for several)
            "s_ref": self.s_ref, "s_ref_source": self.s_ref_source, "live_s_ref": self.live_s_ref,
            "r_perf": self.r_perf, "r_impl": self.r_impl, "reward": self.reward,
            "tests_passed": self.tests_passed, "tests_total": self.tests_total,
            "warnings": list(self.warnings), "overrides": dict(self.overrides),
            "comparison": c.to_dict() if c else None, "worker_logs": dict(self.worker_logs),
            "clock_control": dict(self.clock_control), "isolation": dict(self.isolation),
            "threading": dict(self.threading), "benchmarks": [b.to_dict() for b in self.benchmarks],
            "deadline_s": self.deadline_s, "contract": dict(self.contract), "sol": self.sol,
        }

    @property
    def sol(self) -> dict[str, Any] | None:
        """The speed-of-light section (core/sol.section), from the work, the peaks and the samples."""
        return sol.section_of(self.sol_inputs, self.comparison)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ScoreResult":
        if d.get("schema_version") not in READABLE_SCHEMAS:
            raise SchemaError(f"cannot read schema_version {d.get('schema_version')!r}")
        return cls(task=d["task"], task_kind=d["task_kind"], candidate=d["candidate"], device=d["device"],
                   verdict=d["verdict"], reasons=tuple(Reason(r["code"], r["message"]) for r in d["reasons"]),
                   checks=d["checks"], seed=d["seed"],
                   comparison=ComparisonResult.from_dict(d["comparison"]) if d.get("comparison") else None,
                   s_ref=d.get("s_ref"), s_ref_source=d.get("s_ref_source", ""),
                   tests_passed=d.get("tests_passed"), tests_total=d.get("tests_total"),
                   warnings=tuple(d.get("warnings", ())), overrides=dict(d.get("overrides", {})),
                   worker_logs=dict(d.get("worker_logs", {})), clock_control=dict(d.get("clock_control", {})),
                   isolation=dict(d.get("isolation", {})), threading=dict(d.get("threading", {})),
                   benchmarks=tuple(BenchmarkComparison.from_dict(b) for b in d.get("benchmarks", ())),
                   deadline_s=d.get("deadline_s"), contract=dict(d.get("contract") or {}),
                   sol_inputs={k: d["sol"][k] for k in ("work", "peaks")} if d.get("sol") else {},
                   perfbench_version=d["perfbench_version"])
