"""Which version of a task an s_ref was measured on: a digest of the files that decide the
solution's speedup over the baseline.

s_ref is a property of the task's files as much as of the host: new inputs, a changed baseline
or solution, or a rebuilt shared kernel move it.  bench_configs keeps this digest beside each
s_ref, so that `score` and `calibrate` can tell an entry measured on other files (the date says
nothing about that).  The reference and the starter decide correctness and the starting point,
not the speedup, so an edit there leaves s_ref standing.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .spec import FORMAT_DIR, TaskSpec

TIMED_ROLES = ("inputs", "baseline", "solution")   # a task directory's files that the timing runs


def timed_files(spec: TaskSpec) -> list[Path]:
    """The files digested: task.toml, the timed roles and every file under the `[sandbox] shared`
    paths (the sources the solution builds from); a KernelBench or GPU MODE problem's own file or
    top-level files.  Bytecode caches are not the task."""
    root = spec.root
    if spec.format != FORMAT_DIR:
        return [root] if root.is_file() else sorted(p for p in root.iterdir() if p.is_file())
    files = [root / "task.toml", *(spec.file(role) for role in TIMED_ROLES)]
    for shared in spec.shared:
        p = Path(shared)
        files += (sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
                  if p.is_dir() else [p])
    return files


# task.toml's tables that report on the timing or check the candidate but do not change what
# the timing measures: [contract] (the inputs the gate and the untimed contract blocks draw) and
# [work] (the speed of light's figures).  Adding or editing them leaves an s_ref standing.
UNTIMED_TABLES = ("contract", "work")


def without_untimed_tables(toml: bytes) -> bytes:
    """task.toml's bytes less each UNTIMED_TABLES table (from its header to the next table or
    the end), so a file that never had them digests as before."""
    for name in UNTIMED_TABLES:
        start = toml.find(b"\n[" + name.encode() + b"]")
        if start >= 0:
            end = toml.find(b"\n[", start + 1)
            toml = toml[:start] + (toml[end:] if end >= 0 else b"")
    return toml


def timed_files_digest(spec: TaskSpec) -> str:
    """12 hex digits of SHA-256 over each timed file's path (relative to the task, so that every
    checkout agrees) and contents; a missing file counts as missing, not as empty."""
    h = hashlib.sha256()
    base = spec.root if spec.root.is_dir() else spec.root.parent
    for f in timed_files(spec):
        h.update(os.path.relpath(f, base).replace(os.sep, "/").encode() + b"\0")
        data = f.read_bytes() if f.is_file() else None
        if data is not None and f.name == "task.toml" and spec.format == FORMAT_DIR:
            data = without_untimed_tables(data)
        h.update(hashlib.sha256(data).digest() if data is not None else b"missing")
    return h.hexdigest()[:12]
