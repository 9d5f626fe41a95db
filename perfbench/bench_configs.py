"""Per-hardware s_ref tables (bench_configs/*.toml): find the entry for this device.

A file is named after the device key (e.g. ``cuda-nvidia-h200.toml``, ``cpu-amd-epyc-9554.toml``)
and holds ``[tasks.NAME] s_ref = ...`` entries written by `perfbench calibrate`.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError


def default_dir() -> Path:
    env = os.environ.get("PERFBENCH_BENCH_CONFIGS")
    return Path(env) if env else Path(__file__).resolve().parents[1] / "bench_configs"


def device_key(device: str, fingerprint: dict) -> str:
    if device.startswith("cuda"):
        name = fingerprint.get("cuda", {}).get("name", "unknown-gpu")
        prefix = "cuda"
    else:
        name = fingerprint.get("host", {}).get("cpu_model", "unknown-cpu")
        prefix = "cpu"
    name = re.sub(r"\((r|tm)\)|cpu|@.*$|processor", "", name.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-")
    return f"{prefix}-{slug}"


@dataclass(frozen=True)
class SRef:
    value: float
    source: str       # where it came from, for the result and the report


def lookup(task: str, key: str, directory: Path | None = None) -> SRef | None:
    path = (directory or default_dir()) / f"{key}.toml"
    if not path.is_file():
        return None
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    entry = doc.get("tasks", {}).get(task)
    if entry is None:
        return None
    value = entry.get("s_ref")
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 1:
        raise UsageError(f"{path}: [tasks.{task}] s_ref must be a number > 1, got {value!r}")
    return SRef(float(value), f"bench_configs/{path.name}")
