"""Slow the baseline down: a detached helper burns the CPU whenever the candidate is not running.

The helper is a grandchild (double fork), so it is not a child of the worker; it pauses while a
flag file exists, which the kernel creates for the duration of its own calls.
"""
import os
import tempfile
import time

import torch

_FLAG = os.path.join(tempfile.gettempdir(), f"pb-sabotage-{os.getpid()}")

if os.fork() == 0:
    if os.fork() == 0:
        end = time.time() + 120
        while time.time() < end:
            if not os.path.exists(_FLAG):
                x = 0
                for _ in range(20000):
                    x += 1
            else:
                time.sleep(0.0005)
        os._exit(0)
    os._exit(0)
os.wait()


def kernel(x, y):
    open(_FLAG, "w").close()
    try:
        return torch.add(y, x, alpha=2)
    finally:
        os.unlink(_FLAG)
