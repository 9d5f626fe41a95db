"""SIGTERM ends a command even when its exception lands where Python drops exceptions."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfbench.core.errors import Terminated, UsageError
from perfbench.task.user_files import load_module

REPO = Path(__file__).resolve().parents[2]

# The signal arrives while a __del__ runs, so the handler's exception is raised inside it, where
# the interpreter prints and drops it; the script then runs on and would exit 0.
DROPPED_IN_DEL = textwrap.dedent("""
    import os, signal, sys, time
    from perfbench.cli import termination
    if sys.argv[1] == "handled":
        termination.handle_termination()
        termination.handle_termination()   # a second command in one process wraps the hook once
    else:
        signal.signal(signal.SIGTERM, termination._terminate)

    class Trip:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)
            n = 0
            for _ in range(10_000):   # the handler runs here, inside __del__
                n += 1

    try:
        Trip()
        deadline = time.monotonic() + 1.0   # far longer than the 10 ms redelivery
        while time.monotonic() < deadline:
            pass
    except SystemExit as exc:
        print("unwound", exc.code)
        raise
    print("ran on")
""")


def _run(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", DROPPED_IN_DEL, mode], capture_output=True, text=True,
                          cwd=REPO, timeout=60)


def test_a_termination_dropped_inside_del_is_delivered_again_and_unwinds_with_143():
    proc = _run("handled")
    assert (proc.returncode, proc.stdout.strip()) == (143, "unwound 143"), proc.stderr
    assert "Exception ignored" not in proc.stderr


def test_without_the_redelivery_the_signal_is_lost():
    # What CI saw once: the exception is printed as ignored and the process exits 0.
    proc = _run("bare")
    assert (proc.returncode, proc.stdout.strip()) == (0, "ran on")
    assert "Exception ignored" in proc.stderr and "Terminated: 143" in proc.stderr


@pytest.mark.parametrize("stop", [Terminated(143), KeyboardInterrupt()])
def test_a_stop_while_a_users_file_imports_stops_the_scorer_not_reported_as_the_files_error(tmp_path, monkeypatch, stop):
    # CI saw a SIGTERM land while a task's inputs.py imported: it came out as that file's
    # "import failed", exit 2, instead of unwinding with 143.
    path = tmp_path / "inputs.py"
    path.write_text("import stopper\nstopper.stop()\n")
    (tmp_path / "stopper.py").write_text("STOP = None\ndef stop():\n    raise STOP\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import stopper as module
    module.STOP = stop
    with pytest.raises(type(stop)):
        load_module(path)


def test_a_files_own_exit_is_still_its_import_error(tmp_path):
    path = tmp_path / "inputs.py"
    path.write_text("import sys\nsys.exit(3)\n")
    with pytest.raises(UsageError, match=r"inputs.py: import failed"):
        load_module(path)
