"""Run an implementation task's tests against one file and count what passed.

The tests run in their own pytest process (own session, killed on timeout); the counts come
from pytest's JUnit XML, written to a directory this process created.  Limitation (see
docs/security.md): the code under test runs inside that pytest process, so a hostile candidate
could tamper with its own test run; R_impl is as trustworthy as the task's tests are strict.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError


@dataclass(frozen=True)
class TestRun:
    passed: int
    total: int
    failed_names: tuple[str, ...]
    output_tail: str


def count_tests(tests_dir: Path) -> int:
    """Tests pytest collects in `tests_dir` (no code under test is run)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "perfbench.task.impl_plugin", str(tests_dir)],
                          capture_output=True, text=True, timeout=120, cwd=tests_dir)
    return sum(1 for line in proc.stdout.splitlines() if "::" in line)


def run_tests(tests_dir: Path, file: Path, entry_point: str, timeout_s: float = 300.0) -> TestRun:
    if not tests_dir.is_dir():
        raise UsageError(f"{tests_dir}: missing (impl tasks need a tests/ folder)")
    with tempfile.TemporaryDirectory(prefix="perfbench-impl-") as tmp:
        report = Path(tmp) / "report.xml"
        env = dict(os.environ, PERFBENCH_IMPL_FILE=str(Path(file).resolve()), PERFBENCH_IMPL_ENTRY=entry_point)
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                 "-p", "perfbench.task.impl_plugin", f"--junitxml={report}", str(tests_dir)],
                                cwd=tests_dir, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return TestRun(0, max(count_tests(tests_dir), 1), ("<timeout>",), (out or "")[-2000:])
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not report.is_file():
            return TestRun(0, max(count_tests(tests_dir), 1), ("<no report>",), (out or "")[-2000:])
        total, failed = 0, []
        for case in ET.parse(report).getroot().iter("testcase"):
            total += 1
            if any(child.tag in ("failure", "error", "skipped") for child in case):
                failed.append(f"{case.get('classname')}::{case.get('name')}")
        return TestRun(total - len(failed), total, tuple(failed), (out or "")[-2000:])
