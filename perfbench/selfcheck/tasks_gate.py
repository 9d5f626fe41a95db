"""Selfcheck's task section: every shipped task's solution passes the gate on this device."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..pipeline.config import ScoreConfig
from ..pipeline.gate import gate_only
from ..task.spec import load_task


def shipped_tasks_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "tasks"


def gate_shipped_tasks(device: str, root: Path | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for toml in sorted((root or shipped_tasks_dir()).glob("*/task.toml")):
        spec = load_task(toml.parent)
        if spec.kind != "perf" or spec.device != device.split(":")[0]:
            continue
        checks, fails = gate_only(spec.root, spec.file("solution"), ScoreConfig(device=device, check_seeds=2))
        out[spec.name] = "pass" if not fails else f"FAIL {fails[0].reason}: {fails[0].message}"
    return out
