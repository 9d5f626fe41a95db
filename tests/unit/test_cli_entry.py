"""The console script's exit: it skips the interpreter's teardown, so check that it keeps what
the teardown would have done that matters: the exit status, atexit handlers, flushed output."""
import subprocess
import sys

import pytest

PROGRAM = """
import atexit, sys
from perfbench.cli.main import entry
atexit.register(lambda: print("atexit ran", flush=True))
sys.argv = ["perfbench", *sys.argv[1:]]
print("buffered before the exit", end="")   # no newline, no flush: the exit must flush it
entry()
"""


@pytest.mark.parametrize("args,code", [(["--version"], 0), (["score"], 2), (["score", "nope", "nope.py"], 2)])
def test_entry_keeps_the_status_and_runs_atexit_handlers(args, code):
    proc = subprocess.run([sys.executable, "-c", PROGRAM, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.startswith("buffered before the exit")
    assert "atexit ran" in proc.stdout
    if args == ["--version"]:
        assert "perfbench, version" in proc.stdout
    else:
        assert proc.stderr.strip(), "a usage error says why on stderr"
