"""Tries the kernel keyring as a channel between candidates: looks for the key an earlier
candidate left in its uid's user keyring, then adds one for the next.  Before #39 every worker
ran as one uid, whose keyring outlives namespaces, scores and users.  Its kernel is honest."""
import ctypes
import platform
import sys

import torch

_NR = {"x86_64": (248, 249), "aarch64": (217, 218)}.get(platform.machine())
_libc = ctypes.CDLL(None, use_errno=True)
if _NR is not None:
    add_key, request_key = _NR
    found = _libc.syscall(request_key, b"user", b"perfbench-adversarial-channel", None, ctypes.c_long(0))
    print(f"request_key: {'found' if found >= 0 else 'errno %d' % ctypes.get_errno()}", file=sys.stderr)
    made = _libc.syscall(add_key, b"user", b"perfbench-adversarial-channel", b"secret", 6, ctypes.c_long(-4))
    print(f"add_key: {'added' if made >= 0 else 'errno %d' % ctypes.get_errno()}", file=sys.stderr, flush=True)


def kernel(x, y):
    return torch.add(y, x, alpha=2)
