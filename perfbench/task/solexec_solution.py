"""A SOL-ExecBench solution: solution.json (its sources, `spec.entry_point` "file::function",
`spec.languages`, `spec.destination_passing_style`) or one source file with `--entry-point`,
bound to a problem's TaskSpec (solexec.py) before a score.

A solution.json's sources are written into a directory of their own, which is all of the
solution the candidate's sandbox shows (`TaskSpec.shared`): Triton reads a kernel's source
file, and a solution's files import each other.
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator

from ..core.errors import EnvironmentUnavailable, UsageError
from .spec import TaskSpec

LANGUAGES = ("pytorch", "triton", "cuda_cpp", "cutlass", "cudnn", "cute_dsl", "cutile")
# What perfbench runs of a solution: Python, and Triton (on its interpreter on the CPU).  The
# compiled languages need their upstream build driver (nvcc, CUTLASS, cuDNN, the CuTe and cuTile
# DSLs), which perfbench does not have.
RUNS = ("pytorch", "triton")


@dataclass(frozen=True)
class Solution:
    file: Path                   # the entry point's source file
    function: str
    languages: tuple[str, ...]
    destination_passing: bool    # outputs pre-allocated by the caller, passed after the inputs
    sources_dir: Path | None = None   # where a solution.json's sources were written

    def check_runs(self, where: Path) -> None:
        """A one-line `candidate.unsupported` (exit 2) for a language perfbench cannot run."""
        other = [lang for lang in self.languages if lang not in RUNS]
        if other:
            raise EnvironmentUnavailable(
                f"candidate.unsupported: {where}: a {'/'.join(other)} solution needs SOL-ExecBench's own build "
                f"driver; perfbench runs {' and '.join(RUNS)} solutions (docs/tasks.md)")

    @contextlib.contextmanager
    def environment(self, device: str) -> Iterator[None]:
        """While a score runs: Triton on its interpreter when the device is the CPU (the workers
        inherit the environment; it must be set before triton is imported)."""
        if device != "cpu" or "triton" not in self.languages or "TRITON_INTERPRET" in os.environ:
            yield
            return
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            yield
        finally:
            os.environ.pop("TRITON_INTERPRET", None)


def _entry(text: object, where: str) -> tuple[str | None, str]:
    if not isinstance(text, str) or not text:
        raise UsageError(f"{where}: entry point must be \"file::function\" or \"function\"")
    file, sep, function = text.rpartition("::")
    if not function.isidentifier():
        raise UsageError(f"{where}: entry point {text!r}: {function!r} is not a function name")
    return (file if sep else None), function


def _source_languages(path: Path) -> tuple[str, ...]:
    """A source file's language: triton if it imports triton, else pytorch."""
    try:
        tree = ast.parse(path.read_text())
    except (SyntaxError, UnicodeDecodeError):
        return ("pytorch",)   # (the worker reports the syntax error as the candidate's)
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {(n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return ("triton",) if "triton" in names else ("pytorch",)


def from_source(path: Path, entry_point: str | None, destination_passing: bool) -> Solution:
    """One source file, its function named by `--entry-point` (default `run`, as the reference)."""
    file, function = _entry(entry_point or "run", "--entry-point")
    if file is not None and Path(file).name != path.name:
        raise UsageError(f"--entry-point {entry_point}: names {file}, but the candidate is {path.name}")
    return Solution(path.resolve(), function, _source_languages(path), destination_passing)


def from_json(path: Path, into: Path) -> Solution:
    """solution.json, its sources written under `into` (a new, empty directory)."""
    where = str(path)
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{where}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    spec = doc.get("spec") if isinstance(doc, dict) else None
    sources = doc.get("sources") if isinstance(doc, dict) else None
    if not isinstance(spec, dict) or not isinstance(sources, list) or not sources:
        raise UsageError(f"{where}: a solution needs `spec` and a non-empty list of `sources`")
    languages = spec.get("languages")
    if not isinstance(languages, list) or not languages or not all(lang in LANGUAGES for lang in languages):
        raise UsageError(f"{where}: spec.languages must list some of {', '.join(LANGUAGES)}, got {languages!r}")
    file, function = _entry(spec.get("entry_point"), f"{where}: spec.entry_point")
    written: dict[str, Path] = {}
    for i, src in enumerate(sources):
        rel = src.get("path") if isinstance(src, dict) else None
        parts = PurePosixPath(rel).parts if isinstance(rel, str) else ()
        if not parts or PurePosixPath(rel).is_absolute() or ".." in parts or not isinstance(src.get("content"), str):
            raise UsageError(f"{where}: sources[{i}] needs a relative `path` inside the solution and a `content`")
        target = into.joinpath(*parts)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(src["content"])
        except OSError as exc:   # (a path that is both a file and a folder, a name too long...)
            raise UsageError(f"{where}: sources[{i}]: {rel!r} cannot be written: {exc.strerror}") from None
        written[PurePosixPath(rel).as_posix()] = target
    for d, _, files in os.walk(into):   # readable by the sandbox's unprivileged user: the candidate's own code
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    if file is None or file not in written:
        raise UsageError(f"{where}: spec.entry_point {spec.get('entry_point')!r} names no file of `sources` "
                         f"({', '.join(written)})")
    dps = spec.get("destination_passing_style", False)
    if not isinstance(dps, bool):
        raise UsageError(f"{where}: spec.destination_passing_style must be true or false")
    return Solution(written[file], function, tuple(languages), dps, sources_dir=into)


def read(candidate: Path, entry_point: str | None, destination_passing: bool, into: Path) -> Solution:
    """The solution in `candidate`: a solution.json (its sources written under `into`) or a
    Python source file."""
    if not candidate.is_file():
        raise UsageError(f"{candidate}: no such file")
    if candidate.suffix == ".json":
        if entry_point is not None or destination_passing:
            raise UsageError(f"{candidate}: a solution.json names its own entry point and calling convention "
                             "(--entry-point and --dps are for a source file)")
        return from_json(candidate, into)
    return from_source(candidate, entry_point, destination_passing)


def bind(spec: TaskSpec, solution: Solution) -> TaskSpec:
    """The problem's spec as this solution is called: its function, its calling convention and
    the directory of its sources (which its sandbox shows)."""
    shared = (str(solution.sources_dir),) if solution.sources_dir is not None else ()
    return dataclasses.replace(spec, entry_point=solution.function, destination_passing=solution.destination_passing,
                               shared=shared)
