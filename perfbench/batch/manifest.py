"""What a batch scores: (task, candidate) rows from a JSONL or CSV manifest, or every candidate
file in a directory for one task.  A mistake in the manifest is a one-line UsageError naming
the file and line."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError
from ..task.user_files import read_jsonl


@dataclass(frozen=True)
class BatchRow:
    """One candidate to score on one task.  `id` is what a resumed run recognises it by."""

    id: str
    task: str
    candidate: str
    set: tuple[str, ...] = ()   # the task's --set NAME=VALUE overrides (a problem's sizes)

    def to_dict(self) -> dict:
        return {"id": self.id, "task": self.task, "candidate": self.candidate,
                **({"set": list(self.set)} if self.set else {})}

    @classmethod
    def from_dict(cls, d: dict) -> "BatchRow":
        return cls(d["id"], d["task"], d["candidate"], tuple(d.get("set", ())))


def _overrides(value: object, where: str) -> tuple[str, ...]:
    """A row's `set`: a list of "NAME=VALUE" (jsonl), or those separated by spaces (csv)."""
    items = value.split() if isinstance(value, str) else value if isinstance(value, list) else None
    if items is None or not all(isinstance(i, str) and "=" in i for i in items):
        raise UsageError(f"{where}: set must list NAME=VALUE overrides, got {value!r}")
    return tuple(items)


def _row(fields: dict, where: str, base: Path) -> BatchRow:
    missing = [k for k in ("task", "candidate") if not fields.get(k)]
    if missing:
        raise UsageError(f"{where}: missing {' and '.join(missing)}")
    task, cand = (str(base / f) if not Path(f).is_absolute() else f for f in (fields["task"], fields["candidate"]))
    return BatchRow(str(fields.get("id") or f"{fields['task']}:{fields['candidate']}"), task, cand,
                    _overrides(fields["set"], where) if fields.get("set") else ())


def _check_unique(rows: list[BatchRow], source: Path) -> list[BatchRow]:
    seen: dict[str, int] = {}
    for i, r in enumerate(rows, 1):
        if r.id in seen:
            raise UsageError(f"{source}: row {i} repeats id {r.id!r} (row {seen[r.id]}); a batch scores each row once")
        seen[r.id] = i
    if not rows:
        raise UsageError(f"{source}: no rows")
    return rows


def read_manifest(source: Path, task: Path | None = None) -> list[BatchRow]:
    """Rows of `source`: a .jsonl / .csv manifest (paths relative to its directory), or a
    directory of candidate .py files scored on `task`."""
    if source.is_dir():
        if task is None:
            raise UsageError(f"{source}: a directory of candidates needs --task TASK_DIR")
        return _check_unique([BatchRow(p.name, str(task), str(p)) for p in sorted(source.glob("*.py"))], source)
    if not source.is_file():
        raise UsageError(f"{source}: no such manifest")
    if task is not None:
        raise UsageError("--task applies only to a directory of candidates; a manifest names each row's task")
    base = source.parent
    if source.suffix == ".csv":
        with open(source, newline="") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames or not {"task", "candidate"} <= set(reader.fieldnames):
                raise UsageError(f"{source}: the header must name the columns task and candidate")
            rows = [_row(r, f"{source}:{i}", base) for i, r in enumerate(reader, 2)]
    elif source.suffix in (".jsonl", ".ndjson"):
        rows = [_row(fields, f"{source}:{i}", base)
                for i, fields in read_jsonl(source, "a row must be an object with task and candidate")]
    else:
        raise UsageError(f"{source}: a manifest is .jsonl or .csv (or a directory of candidates)")
    return _check_unique(rows, source)
