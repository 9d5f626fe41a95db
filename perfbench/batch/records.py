"""One batch row's outcome, and the append-only JSONL file a batch writes them to.

A record is appended (and flushed to disk) the moment its row finishes, so a killed batch keeps
every finished row; a resumed one reads the ids already there and never scores them again.  A
line cut short by the kill is ignored (that row runs again)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import UsageError

BATCH_SCHEMA = 1
OUTCOMES = ("scored", "rejected", "error")
ERROR_KINDS = ("usage", "infrastructure")   # usage: not retried; infrastructure: retried


@dataclass(frozen=True)
class BatchRecord:
    id: str
    task: str
    candidate: str
    outcome: str                        # scored | rejected | error
    attempts: int
    wall_s: float
    error_kind: str | None = None       # for outcome "error"
    error: str = ""
    result: dict[str, Any] | None = None   # ScoreResult.to_dict() when scored or rejected
    device_key: str | None = None       # the hardware class the s_ref came from
    schema: int = BATCH_SCHEMA

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")
        if (self.outcome == "error") != (self.error_kind is not None):
            raise ValueError("an error record needs an error_kind, and only it")
        if self.error_kind is not None and self.error_kind not in ERROR_KINDS:
            raise ValueError(f"error_kind must be one of {ERROR_KINDS}, got {self.error_kind!r}")
        if self.outcome != "error" and self.result is None:
            raise ValueError(f"a {self.outcome} record needs its result")

    @property
    def speedup(self) -> float | None:
        return self.result.get("speedup") if self.result else None

    @property
    def r_perf(self) -> float | None:
        return self.result.get("r_perf") if self.result else None

    @property
    def reasons(self) -> list[str]:
        return [r["code"] for r in self.result.get("reasons", [])] if self.result else []

    def to_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "id": self.id, "task": self.task, "candidate": self.candidate,
                "outcome": self.outcome, "attempts": self.attempts, "wall_s": self.wall_s,
                "error_kind": self.error_kind, "error": self.error, "device_key": self.device_key,
                "speedup": self.speedup, "r_perf": self.r_perf, "reasons": self.reasons, "result": self.result}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "BatchRecord":
        if d.get("schema") != BATCH_SCHEMA:
            raise ValueError(f"schema {d.get('schema')!r}, this perfbench reads {BATCH_SCHEMA}")
        return cls(d["id"], d["task"], d["candidate"], d["outcome"], int(d["attempts"]), float(d["wall_s"]),
                   d.get("error_kind"), d.get("error", ""), d.get("result"), d.get("device_key"))


@dataclass
class ResultsFile:
    """The batch's JSONL: `done` holds the records already in it."""

    path: Path
    done: dict[str, BatchRecord] = field(default_factory=dict)

    @classmethod
    def open(cls, path: Path) -> "ResultsFile":
        out = cls(path)
        if path.exists():
            data = path.read_bytes()
            whole = data[:data.rfind(b"\n") + 1]   # a last line without its newline was cut by a kill
            if len(whole) < len(data):
                os.truncate(path, len(whole))   # drop it (that row runs again); the file stays JSONL
            for i, line in enumerate(whole.decode().splitlines(), 1):
                if line.strip():
                    try:
                        rec = BatchRecord.from_dict(json.loads(line))
                    except (json.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
                        raise UsageError(f"{path}:{i}: not a batch record ({exc})") from None
                    out.done[rec.id] = rec
        return out

    def append(self, rec: BatchRecord) -> None:
        if rec.id in self.done:
            raise ValueError(f"row {rec.id!r} is already in {self.path}")
        with open(self.path, "a") as f:
            f.write(json.dumps(rec.to_dict(), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.done[rec.id] = rec
