"""The processes of `--perfbench-against=REV`: one test, at REV and in the working tree, each
in a fresh pytest process that times its own function on request (timing/served_side.py), so their
blocks pair AB-BA in the same minute.

The main session starts `python -m pytest NODEID --perfbench-serve=FD` in REV's worktree and
in the working tree.  Each runs its test up to its `perfbench(fn, make_inputs)` call, where the
fixture, instead of measuring, serves blocks until done; then the test goes on.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from ..timing.inprocess import InProcessSide
from ..timing.served_side import Refused, ServedSide, serve


def start_test_process(label: str, root: Path, env: dict[str, str], nodeid: str, args: tuple[str, ...]) -> ServedSide:
    """Start `nodeid`'s test in a fresh pytest process rooted at `root`."""
    def argv(fd: int) -> list[str]:
        return [sys.executable, "-m", "pytest", nodeid, "-q", "-p", "no:cacheprovider", f"--perfbench-serve={fd}", *args]

    def explain(rc: int, log: str) -> str | None:
        if rc in (4, 5):   # pytest: usage error (node id not found) / nothing collected
            return f"{nodeid} does not exist in {label}"
        return None
    return ServedSide(label, argv, cwd=root, env=env, explain_exit=explain)


def serve_test(fd: int, make_side: Callable[[str], InProcessSide] | None) -> None:
    """The test's end: time `make_side(device)`'s blocks; None: the test pairs two functions
    itself (perfbench.compare) and there is nothing to serve."""
    def start(msg: dict) -> tuple[InProcessSide, dict]:
        if make_side is None:
            raise Refused("the test pairs two functions itself (perfbench.compare): nothing to pair with")
        return make_side(str(msg["device"])), {}
    serve(fd, {"pid_of": "perfbench test"}, start)
