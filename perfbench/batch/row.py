"""Score batch rows in a scorer process of their own, one JSON record per row on stdout.

``python -m perfbench.batch.row --serve OPTIONS_JSON`` reads rows (one JSON object per line) on
stdin and answers each with its record: a row server, one per slot, that keeps the baseline's
workers between rows of one task (pipeline/baseline_pool.py).  A scorer that crashes (a bug, a
signal, memory) takes down one slot's server, never the batch: the runner starts another.  A
candidate's failure is a verdict ("rejected"); a user's mistake ("usage") and the machine's
("infrastructure") are errors, and only the machine's are worth retrying."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass

from ..core.errors import PerfbenchError, UsageError
from ..core.verdict import VERDICT_REJECTED
from ..device.fingerprint import fingerprint
from ..task import bench_configs
from ..task.spec import parse_overrides
from .manifest import BatchRow
from .records import BatchRecord


@dataclass(frozen=True)
class BatchOptions:
    """The `perfbench score` options a batch applies to every row."""

    processes: int = 3
    min_pairs: int | None = None
    max_pairs: int | None = None
    budget_s: float | None = None
    s_ref: float | None = None
    s_ref_policy: str = "auto"       # without s_ref: auto | live | table (bench_configs.S_REF_POLICIES)
    target_r_ci: float | None = 0.05
    call_timeout_s: float = 60.0
    deadline_s: float | None = None   # each score's (None: the task's default, core/deadline.py)
    require_sandbox: bool = False
    device: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def score_config(self):
        from ..pipeline.config import sampler_config
        from ..pipeline.config import ScoreConfig

        try:
            return ScoreConfig(sampler=sampler_config(min_pairs=self.min_pairs, max_pairs=self.max_pairs,
                                                      budget=self.budget_s),
                               processes=self.processes, s_ref=self.s_ref, s_ref_policy=self.s_ref_policy,
                               target_r_ci=self.target_r_ci,
                               call_timeout_s=self.call_timeout_s, deadline_s=self.deadline_s,
                               require_sandbox=self.require_sandbox,
                               device=self.device)
        except ValueError as exc:
            raise UsageError(str(exc)) from None


RECORD_PREFIX = "perfbench-record "   # marks the server's answers among anything else on stdout


def score_row(row: BatchRow, options: BatchOptions, baselines=None, warm_parents=None) -> BatchRecord:
    """Score `row` here; every outcome, errors included, as a record."""
    from ..pipeline.score import score

    t0 = time.perf_counter()
    common = dict(id=row.id, task=row.task, candidate=row.candidate, attempts=1)
    try:
        result = score(row.task, row.candidate, options.score_config(), baselines=baselines,
                       warm_parents=warm_parents, overrides=parse_overrides(row.set))
    except (UsageError, FileNotFoundError) as exc:
        return BatchRecord(**common, outcome="error", wall_s=time.perf_counter() - t0, error_kind="usage", error=str(exc))
    except (PerfbenchError, OSError) as exc:   # no device, no free core, no NVML, ...: the machine's
        return BatchRecord(**common, outcome="error", wall_s=time.perf_counter() - t0, error_kind="infrastructure",
                           error=f"{type(exc).__name__}: {exc}")
    threads = result.threading.get("threads") if result.threading else None
    fp = result.comparison.fingerprint if result.comparison is not None else fingerprint(result.device)
    key = bench_configs.device_key(result.device, fp, threads)
    return BatchRecord(**common, outcome="rejected" if result.verdict == VERDICT_REJECTED else "scored",
                       wall_s=time.perf_counter() - t0, result=result.to_dict(), device_key=key)


def serve(options: BatchOptions) -> None:
    """Rows on stdin, records on stdout, until stdin closes."""
    from ..isolation.processes.warm_parent_handle import WarmParents
    from ..pipeline.baseline_pool import BaselinePool

    pool, parents = BaselinePool(), WarmParents()
    try:
        for line in sys.stdin:
            if line.strip():
                rec = score_row(BatchRow.from_dict(json.loads(line)), options, pool, parents)
                sys.stdout.write(RECORD_PREFIX + json.dumps(rec.to_dict()) + "\n")
                sys.stdout.flush()
    finally:
        parents.close()
        pool.close()


def main(argv: list[str]) -> None:
    if len(argv) != 2 or argv[0] != "--serve":
        sys.exit("usage: python -m perfbench.batch.row --serve OPTIONS_JSON")
    serve(BatchOptions(**json.loads(argv[1])))


if __name__ == "__main__":
    main(sys.argv[1:])
