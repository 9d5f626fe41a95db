"""How `perfbench score` runs: one frozen config for the whole pipeline (`ScoreConfig`), the perf
score `score` hands on once it holds the device (`PerfJob`), and what every worker process of one
score is given (`RunSetup`)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.deadline import Deadline
from ..core.errors import UsageError
from ..core.score_key import ScoreKey
from ..device.clocks import ClockRequest
from ..task.bench_configs import S_REF_AUTO, S_REF_POLICIES
from ..timing.sampler import SamplerConfig

if TYPE_CHECKING:   # (score.py imports this module before torch: the task program needs it)
    from ..isolation.processes.cpu_threads import CpuThreading
    from ..task.program import TaskProgram
    from ..task.spec import TaskSpec


@dataclass(frozen=True)
class PackageSource:
    """Package `name` imported from the source tree `tree` (a checkout: `tree/src/name` or
    `tree/name`) instead of the installed one, by one side's workers (two Scorch revisions)."""

    name: str
    tree: Path

    @property
    def import_root(self) -> Path:
        """The directory that goes first on the side's sys.path."""
        return self.tree / "src" if (self.tree / "src" / self.name / "__init__.py").is_file() else self.tree

    @classmethod
    def parse(cls, text: str) -> "PackageSource":
        """NAME=PATH, checked: PATH holds package NAME (at its top or under src/)."""
        name, eq, path = text.partition("=")
        if not eq or not name.isidentifier() or not path:
            raise ValueError(f"{text!r}: expected NAME=PATH, e.g. scorch=/path/to/scorch-checkout")
        source = cls(name, Path(path).expanduser().resolve())
        if not (source.import_root / name / "__init__.py").is_file():
            raise ValueError(f"{path}: no package {name!r} there (looked for {name}/__init__.py and src/{name}/__init__.py)")
        return source


@dataclass(frozen=True)
class ScoreConfig:
    """How to score.  Defaults suit a CPU task of ~1-20 ms per call."""

    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    device: str | None = None         # None: the task's device
    check_seeds: int = 3              # fresh secret seeds per input size in the gate
    load_timeout_s: float = 300.0     # loading may compile C++ (~35 s here)
    call_timeout_s: float = 60.0      # one gate call or one timed block
    timed_check_fraction: float = 0.3  # share of timed blocks whose output is checked (>= 2 blocks)
    timed_check_budget: float = 0.5   # CPU: more blocks checked (up to all) while checking costs at
                                      # most this share of the candidate's timed time (docs/security.md)
    contract_block_share: float = 0.15  # share of pair ends at which the candidate also runs an untimed
                                      # block on its contract's inputs (sides/contract_blocks.py): one
                                      # fragile in its last n pairs escapes with (1 - share)^n (30: 0.8%)
    clocks: ClockRequest = field(default_factory=ClockRequest)  # GPU clock policy while timing
    s_ref: float | None = None        # override bench_configs / the task default
    s_ref_policy: str = S_REF_AUTO    # without s_ref: auto | live | table (bench_configs.S_REF_POLICIES)
    live_solution_every: int = 2      # s_ref live: the solution's pair in every n-th round only, for
                                      # (1 + 1/n) times a plain score's blocks (sampler.interleaved_slots)
    seed: int | None = None           # master seed (default: secret, drawn per run)
    deadline_s: float | None = None   # the whole score's (None: core/deadline.default_seconds)
    bench_configs_dir: Path | None = None
    sandbox: bool = True              # every isolation layer this machine allows (docs/security.md)
    require_sandbox: bool = False     # refuse to score unless every layer is active
    processes: int = 3                # fresh worker pairs the pairs are split between (>= 2: the CI
                                      # includes the between-process variance; docs/verdict.md)
    target_r_ci: float | None = 0.05  # stop after a process once R_perf's CI is this narrow (None:
                                      # never on R_perf's width; core/stopping.py)
    ci_target: float | None = 0.03    # stop adding processes once the speedup's CI is this narrow either
                                      # side (log scale, at the look's confidence; None: never on its
                                      # width).  A look comes only after stop_min_processes, so it acts
                                      # when `processes` is raised above them (docs/verdict.md)
    stop_early: bool = True           # False: every process measures (calibration, validity gates)
    stop_min_processes: int = 3       # an early stop leaves at least this many processes measured: the
                                      # speedup is published too (>= 2; core/stopping.py)
    fork_workers: bool = True         # CPU: each side's workers forked from one warmed, sandboxed
                                      # zygote (isolation/processes/zygote.py) instead of fresh interpreters
    warm_parent: bool = True          # ... and the zygotes forked into their sandboxes by one root
                                      # process that imported torch once (isolation/processes/warm_parent.py)
    base_packages: tuple[PackageSource, ...] = ()   # the baseline imports these from checkouts
    cand_packages: tuple[PackageSource, ...] = ()   # ... and the candidate these (shown in its sandbox)

    def __post_init__(self) -> None:
        if not self.call_timeout_s > 0 or not self.load_timeout_s > 0:
            raise ValueError("timeouts must be > 0 seconds")
        if self.deadline_s is not None and not 0 < self.deadline_s < float("inf"):
            raise ValueError(f"deadline must be a positive number of seconds, got {self.deadline_s}")
        if not 0 <= self.contract_block_share <= 1:
            raise ValueError(f"contract_block_share must be in [0, 1], got {self.contract_block_share}")
        if self.live_solution_every < 1:
            raise ValueError(f"live_solution_every must be >= 1, got {self.live_solution_every}")
        if self.check_seeds < 1:
            raise ValueError(f"check_seeds must be >= 1, got {self.check_seeds}")
        if self.processes < 1:
            raise ValueError(f"processes must be >= 1, got {self.processes}")
        if self.target_r_ci is not None and not 0 <= self.target_r_ci <= 1:
            raise ValueError(f"target_r_ci must be in [0, 1], got {self.target_r_ci}")
        if self.ci_target is not None and not 0 <= self.ci_target < 1:
            raise ValueError(f"ci_target must be in [0, 1), got {self.ci_target}")
        if self.s_ref is not None and not self.s_ref > 1:
            raise ValueError(f"s_ref must be > 1, got {self.s_ref}")
        if self.stop_min_processes < 2:
            raise ValueError(f"stop_min_processes must be >= 2, got {self.stop_min_processes}")
        if self.s_ref_policy not in S_REF_POLICIES:
            raise ValueError(f"s_ref_policy must be one of {'|'.join(S_REF_POLICIES)}, got {self.s_ref_policy!r}")


def sampler_config(*, min_pairs: int | None = None, max_pairs: int | None = None,
                   budget: float | None = None, base: SamplerConfig | None = None) -> SamplerConfig:
    """Apply command-line overrides to a config; a bad value is a one-line UsageError."""
    base = base or SamplerConfig()
    changes = {k: v for k, v in (("min_pairs", min_pairs), ("max_pairs", max_pairs),
                                 ("time_budget_s", budget)) if v is not None}
    if min_pairs is not None and max_pairs is None and min_pairs > base.max_pairs:
        changes["max_pairs"] = min_pairs
    try:
        return dataclasses.replace(base, **changes)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


@dataclass(frozen=True)
class PerfJob:
    """One perf score, as `score` hands it to score_processes.score_perf once it holds the device:
    what is scored, where, under which secret key and settings, and by when."""

    spec: TaskSpec
    candidate: Path
    device: str
    key: ScoreKey
    cfg: ScoreConfig
    deadline: Deadline | None = None   # the score's (None: no deadline, as in the tests' in-process scores)


@dataclass(frozen=True)
class RunSetup:
    """What every worker process of one score is given."""

    spec: TaskSpec
    program: TaskProgram
    device: str
    cand_path: Path
    baseline_file: Path
    cfg: ScoreConfig
    sampler: SamplerConfig
    threading: CpuThreading | None
    key: ScoreKey
    deadline: Deadline | None   # the score's: every request to the candidate's worker ends by it
    solution_file: Path | None = None   # s_ref live: the task's solution, timed against the baseline too
    gate: bool = True                   # the untimed process runs the correctness gate (GPU MODE: the first benchmark's)
