"""Fills its private directory (its TMPDIR) with files and fsyncs them (#39): before, that was a
directory of the scorer's on disk, bounded per file only; the next scores' baselines measured
15-20% slower while the writeback went on.  Now it is a tmpfs of bounded size whose pages count
against the worker's memory limit: the writes stop at ENOSPC, nothing reaches a disk.  It logs
how far it got, and stays honest."""
import errno
import os
import sys
import tempfile

import torch

_calls = 0


def _fill() -> None:
    chunk, written = b"\xab" * (16 << 20), 0
    try:
        for i in range(1 << 20):
            with open(os.path.join(tempfile.gettempdir(), f"fill-{i}"), "wb") as f:
                for _ in range(8):   # 128 MiB per file
                    f.write(chunk)
                    written += len(chunk)
                f.flush()
                os.fsync(f.fileno())
    except OSError as exc:
        print(f"filled {written >> 20} MiB, then {errno.errorcode.get(exc.errno, exc.errno)}", file=sys.stderr,
              flush=True)
    for name in os.listdir(tempfile.gettempdir()):
        if name.startswith("fill-"):
            os.unlink(os.path.join(tempfile.gettempdir(), name))


def kernel(x, y):
    global _calls
    _calls += 1
    if _calls == 21:   # the first timed call (the gate makes 12, its input contract 8)
        _fill()
    return torch.add(y, x, alpha=2)
