"""Saved benchmark runs under `.perfbench/<machine key>/NNNN_<name>.json`.

A run is only ever compared with runs of the same machine key: the CPU model and core count,
the GPU model, Python and torch versions (not the hostname: CI hosts are fresh containers of
one machine class).  A saved run of another key is refused, never silently compared.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..task.bench_configs import device_key

STORE_SCHEMA = 1


class StoreError(Exception):
    """A saved run cannot be used (missing, malformed, another machine's): the message says which."""


def machine_key(fingerprint: dict[str, Any]) -> str:
    host = fingerprint.get("host", {})
    device = "cuda" if "cuda" in fingerprint else "cpu"
    parts = [device_key(device, fingerprint), f"{host.get('cpu_count', 0)}c",
             f"py{'.'.join(str(host.get('python', sys.version.split()[0])).split('.')[:2])}",
             f"torch{str(host.get('torch', 'none')).split('+')[0]}"]
    if device == "cuda":   # the host's CPU too: launch overhead depends on it
        parts.insert(1, device_key("cpu", fingerprint))
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(parts))


def valid_run_name(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9_.-]+", name) is not None and not name.endswith(".json")


@dataclass(frozen=True)
class SavedRun:
    path: Path
    machine_key: str
    samples_ns: dict[str, list[float]]   # test's full name -> per-iteration times of its function

    @classmethod
    def read(cls, path: Path) -> "SavedRun":
        try:
            doc = json.loads(path.read_text())
            meta = doc["perfbench"]
            if meta.get("store_schema") != STORE_SCHEMA:
                raise StoreError(f"{path}: saved with store schema {meta.get('store_schema')}, "
                                 f"this perfbench reads {STORE_SCHEMA}")
            samples = {b["fullname"]: [float(x) for x in b["extra_info"]["perfbench"]["samples_ns"]]
                       for b in doc["benchmarks"]}
            return cls(path, str(meta["machine_key"]), samples)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{path}: not a perfbench saved run ({type(exc).__name__}: {exc})") from None


class RunStore:
    def __init__(self, root: Path, key: str):
        self.root = root
        self.key = key
        self.dir = root / key

    def _runs(self, directory: Path) -> list[Path]:
        return sorted(directory.glob("[0-9][0-9][0-9][0-9]_*.json")) if directory.is_dir() else []

    def save(self, name: str, document: dict[str, Any]) -> Path:
        if not valid_run_name(name):
            raise StoreError(f"--perfbench-save={name!r}: use letters, digits, '.', '_' or '-'")
        self.dir.mkdir(parents=True, exist_ok=True)
        runs = self._runs(self.dir)
        number = int(runs[-1].name[:4]) + 1 if runs else 1
        path = self.dir / f"{number:04d}_{name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(document, indent=2, sort_keys=True))
        tmp.replace(path)   # a run killed mid-write leaves no half file
        return path

    def load(self, name: str | None) -> SavedRun:
        """The saved run called `name` (its NNNN number, its name, or a path to its file), or
        the latest one of this machine when None."""
        if name and name.endswith(".json"):
            run = SavedRun.read(Path(name))
        else:
            runs = [p for p in self._runs(self.dir)
                    if name is None or p.stem[5:] == name or p.name[:4] == name.zfill(4)]
            if not runs:
                others = sorted(d.name for d in self.root.iterdir() if d.is_dir() and d != self.dir) \
                    if self.root.is_dir() else []
                what = f"no saved run {name!r}" if name else "no saved run"
                where = (f"; saved runs exist only for other machines ({', '.join(others)}): perfbench never "
                         "compares across machines") if others else f" in {self.root} (save one with --perfbench-save=NAME)"
                raise StoreError(f"--perfbench-compare: {what} for this machine ({self.key}){where}")
            run = SavedRun.read(runs[-1])
        if run.machine_key != self.key:
            raise StoreError(f"--perfbench-compare: {run.path} was measured on {run.machine_key}, this machine is "
                             f"{self.key}: perfbench never compares across machines")
        return run
