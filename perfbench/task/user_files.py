"""Load a user's Python file as a module and pick named objects from it, with one-line errors.

Used for trusted code (task files, `perfbench compare` inputs) in the scorer process and for
candidates inside worker processes.  Every failure becomes a `UsageError` (the user's file is
wrong) or a `CandidateRejected` (`candidate.syntax`, `candidate.import_error`, ...) naming the
file, never a traceback.
"""
from __future__ import annotations

import importlib.util
import itertools
import json
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from ..core.errors import CandidateRejected, Terminated, UsageError

_counter = itertools.count()


_OWN_DIR = Path(__file__).resolve().parents[1]   # perfbench/ itself


def _user_frame(exc: BaseException, path: Path | None) -> str | None:
    """'file.py:LINE' of the deepest frame in user code (in `path` if given), for messages.

    User code is anything outside perfbench itself and outside installed packages, so an
    error raised inside torch still points at the user's line that called it.
    """
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        f = Path(frame.filename).resolve()
        if path is not None:
            if f == path:
                where = f"{f.name}:{frame.lineno}"
        elif _OWN_DIR not in f.parents and "site-packages" not in f.parts and f.suffix == ".py":
            where = f"{f.name}:{frame.lineno}"
    return where


def compiler_diagnostic(text: str) -> str | None:
    """The first compiler error in a build log ("main.cpp:12:5: error: ..."), or None."""
    return next((ln.strip()[:300] for ln in text.splitlines() if ": error:" in ln or ": fatal error:" in ln), None)


def describe_exception(exc: BaseException, path: Path | None = None) -> str:
    """'ValueError: boom at file.py:12': one line, whatever the exception's message holds.  A
    failed C++ build (torch's load_inline) says its first compiler error, not the ninja command."""
    text = str(exc).strip()
    msg = text.splitlines()[0] if text else ""
    diagnostic = compiler_diagnostic(text)
    if diagnostic and diagnostic not in msg:
        msg = f"{msg.split(':')[0]}: {diagnostic}"
    where = _user_frame(exc, path)
    return f"{type(exc).__name__}{': ' + msg if msg else ''}{' at ' + where if where else ''}"


def load_module(path: str | Path, *, untrusted: bool = False) -> ModuleType:
    """Execute `path` as a fresh module with a unique name.

    The file's folder goes on sys.path while it loads so it can import its siblings (trusted
    files; a sandboxed candidate's worker shows no siblings: docs/security.md).
    Errors: a missing file is a UsageError; a syntax error or an exception while importing is a
    CandidateRejected when `untrusted`, else a UsageError.
    """
    p = Path(path).expanduser().resolve()
    if not p.is_file():
        raise UsageError(f"{path}: no such file")
    name = f"perfbench_user_{p.stem}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, p)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(p.parent))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        msg = f"{path}:{exc.lineno}: syntax error: {exc.msg}"
        raise (CandidateRejected("candidate.syntax", msg) if untrusted else UsageError(msg)) from None
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if isinstance(exc, (KeyboardInterrupt, Terminated)):   # the scorer is being stopped, not the file
            raise
        msg = f"{path}: import failed: {describe_exception(exc, p)}"
        raise (CandidateRejected("candidate.import_error", msg) if untrusted else UsageError(msg)) from None
    finally:
        try:
            sys.path.remove(str(p.parent))
        except ValueError:
            pass
    return module


def get_callable(module: ModuleType, name: str, path: str | Path, *, untrusted: bool = False) -> Callable[..., Any]:
    obj = getattr(module, name, None)
    if obj is None:
        msg = f"{path}: defines no function named {name!r}"
        raise CandidateRejected("candidate.missing_entry_point", msg) if untrusted else UsageError(msg)
    if not callable(obj):
        msg = f"{path}: {name!r} is a {type(obj).__name__}, not a function"
        raise CandidateRejected("candidate.missing_entry_point", msg) if untrusted else UsageError(msg)
    return obj


def read_jsonl(path: Path, expected: str) -> list[tuple[int, dict]]:
    """A JSON Lines file's objects with their line numbers, blank lines skipped; a line that is
    not a JSON object is a one-line UsageError naming it (`expected` says what it should be)."""
    objects = []
    for n, text in enumerate(path.read_text().splitlines(), 1):
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(value, dict):
            raise UsageError(f"{path}:{n}: {expected}")
        objects.append((n, value))
    return objects
