"""Truncates the scorer's shared arenas from inside its timed calls (#39): the worker holds both
memfds read-write, and before they were sealed the scorer's next access to its own mapping died
of SIGBUS (exit 135, no verdict, workers and cgroups left behind).  It also tries to seal them
against growing and writing, and grows them.  It swallows every refusal and stays honest, so
with the arenas sealed it is scored on its true values.  What it managed goes to its log."""
import fcntl
import os
import sys

import torch

_done = False


def _arenas() -> list[int]:
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if "perfbench-candidate" in os.readlink(f"/proc/self/fd/{name}"):
                fds.append(int(name))
        except OSError:
            continue
    return fds


def _attack() -> None:
    for fd in _arenas():
        for what, act in (("grow", lambda: os.ftruncate(fd, os.fstat(fd).st_size + (1 << 20))),
                          ("seal", lambda: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)),
                          ("shrink", lambda: os.ftruncate(fd, 0))):
            try:
                act()
                print(f"arena fd {fd}: {what} done", file=sys.stderr, flush=True)
            except OSError as exc:
                print(f"arena fd {fd}: {what} refused ({exc.errno})", file=sys.stderr, flush=True)


def kernel(x, y):
    global _done
    if not _done and _arenas():   # (the gate's calls come before the arenas are mapped)
        _done = True
        _attack()
    return torch.add(y, x, alpha=2)
