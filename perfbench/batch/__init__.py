"""Batch scoring: many (task, candidate) rows, each in a fresh scorer process, locally or on Ray.

`perfbench score-batch MANIFEST` on the command line; `score_many(rows)` for in-process callers
such as an RL reward function."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterable

from .manifest import BatchRow, read_manifest
from .records import BatchRecord, ResultsFile
from .row import BatchOptions
from .runner import run_batch
from .summary import BatchSummary

__all__ = ["BatchRow", "BatchRecord", "BatchOptions", "BatchSummary", "ResultsFile", "read_manifest",
           "run_batch", "score_many"]


def score_many(rows: Iterable[tuple[str, str] | BatchRow], options: BatchOptions | None = None, *,
               backend: str = "local", out: Path | None = None, address: str | None = None) -> list[BatchRecord]:
    """Score every (task, candidate) row; records in the rows' order.  With `out`, records are
    also appended there as they finish, and rows already in it are not scored again."""
    batch = [r if isinstance(r, BatchRow) else BatchRow(f"{i}:{r[0]}:{r[1]}", str(r[0]), str(r[1]))
             for i, r in enumerate(rows)]
    with tempfile.TemporaryDirectory(prefix="perfbench-batch-") as tmp:
        results = ResultsFile.open(out if out is not None else Path(tmp) / "results.jsonl")
        run_batch(batch, options or BatchOptions(), results, backend=backend, address=address)
        return [results.done[r.id] for r in batch]
