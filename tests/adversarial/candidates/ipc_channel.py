"""Tries IPC and files as a channel between candidates: looks for what an earlier candidate left
in a System V shared memory segment (a fixed key), in /dev/shm and in its private directory
(TMPDIR) and /tmp, then leaves all of them for the next.  Its kernel is honest.

Every worker of one score is forked from one zygote, which shares its IPC namespace, /dev/shm
and private directory with them (docs/security.md), so each mark carries its zygote's start
time: a mark from this score is told apart from one from another score, and a worker that saw
another score's mark passes that on (the scorer keeps only the last worker's log)."""
import ctypes
import os
import sys
import tempfile

import torch

_KEY, _IPC_CREAT, _SIZE = 0x5EED1234, 0o1000, 4096
_NAME = "/dev/shm/perfbench-adversarial-channel"
_FILES = [os.path.join(tempfile.gettempdir(), "perfbench-adversarial-channel"), "/tmp/perfbench-adversarial-channel"]
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
_libc.shmat.restype = ctypes.c_void_p


def _zygote() -> str:
    try:   # pid 1 of this namespace is the zygote: its start time names this score's zygote
        with open("/proc/1/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "unknown"


ME = _zygote()


def _verdict(mark: str | None) -> str:
    """none, this score's, or another score's (a mark from another zygote, or one passed on)."""
    if mark is None:
        return "none"
    token, _, leaked = mark.partition("|")
    return "another score's" if leaked or token != ME else "this score's"


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


shmid = _libc.shmget(_KEY, 0, 0)
sysv = None
if shmid >= 0:
    addr = _libc.shmat(shmid, None, 0)
    sysv = ctypes.string_at(addr, 64).split(b"\0")[0].decode() if addr not in (None, ctypes.c_void_p(-1).value) else "?"
found = {"sysv": _verdict(sysv), "shm file": _verdict(_read(_NAME)),
         "private files": max((_verdict(_read(f)) for f in _FILES), key=("none", "this score's", "another score's").index)}
for what, verdict in found.items():
    print(f"{what}: {verdict}", file=sys.stderr)
mark = ME + ("|leak" if "another score's" in found.values() else "")
made = _libc.shmget(_KEY, _SIZE, _IPC_CREAT | 0o666)
if made >= 0:
    addr = _libc.shmat(made, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(addr, mark.encode() + b"\0", len(mark) + 1)
with open(_NAME, "w") as f:
    f.write(mark)
left = []
for name in _FILES:
    try:
        with open(name, "w") as f:
            f.write(mark)
        left.append(name)
    except OSError:
        pass
print(f"left: sysv {'yes' if made >= 0 else 'no'}, shm file yes, private files {len(left)}", file=sys.stderr, flush=True)


def kernel(x, y):
    return torch.add(y, x, alpha=2)
