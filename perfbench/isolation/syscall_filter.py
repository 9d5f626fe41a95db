"""A seccomp filter every worker (and zygote) installs on itself before task code runs: the
kernel's key management calls, `add_key`, `request_key` and `keyctl`, fail with EPERM.

Why: a uid's kernel keyring is not part of any namespace the sandbox makes.  Every worker runs
as the same uid (`nobody`, or root where the uid cannot switch), so a key one candidate added
was readable by the next, in another score, and stayed after both (#39): a channel between
candidates, between rows of a batch, and between users.  No kernel, Python or torch code an
honest kernel runs uses keyrings.  The filter is inherited by every child and cannot be removed;
it also refuses syscalls made through another ABI (32-bit or x32 entry points), which could
otherwise reach the same calls under other numbers.  `keyrings_denied` is the worker's probe.
"""
from __future__ import annotations

import ctypes
import platform

# (AUDIT_ARCH of the native ABI, (add_key, request_key, keyctl) syscall numbers)
_NATIVE = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}
_X32_BIT = 0x40000000

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1   # SECCOMP_RET_ERRNO | EPERM
# classic BPF opcodes
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_OFFSET_NR, _OFFSET_ARCH = 0, 4   # struct seccomp_data
_KEYCTL_GET_KEYRING_ID, _KEY_SPEC_USER_KEYRING = 0, -4


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _program(arch: int, numbers: tuple[int, int, int]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) per instruction; jumps count instructions after the next one."""
    add_key, request_key, keyctl = numbers
    return [
        (_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_JEQ_K, 1, 0, arch),            # native ABI: on to the number; else refused
        (_RET_K, 0, 0, _RET_EPERM),
        (_LD_W_ABS, 0, 0, _OFFSET_NR),
        (_JGE_K, 4, 0, _X32_BIT),        # x32 entry points: refused
        (_JEQ_K, 3, 0, add_key),
        (_JEQ_K, 2, 0, request_key),
        (_JEQ_K, 1, 0, keyctl),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_EPERM),
    ]


def deny_keyrings() -> bool:
    """Install the filter on this process (and so on every thread and child it makes later;
    call it while single-threaded).  False where the machine or kernel cannot."""
    native = _NATIVE.get(platform.machine())
    if native is None:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        insns = _program(*native)
        array = (_SockFilter * len(insns))(*(_SockFilter(*i) for i in insns))
        prog = _SockFprog(len(insns), array)
        # Unprivileged filters need no_new_privs (set by the sandbox already; harmless again).
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0
    except (OSError, AttributeError):
        return False


def keyrings_denied() -> bool:
    """Whether this process's keyctl fails with EPERM (the filter holds), by a call that
    changes nothing: the id of the user keyring, not created if absent."""
    native = _NATIVE.get(platform.machine())
    if native is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.syscall(native[1][2], _KEYCTL_GET_KEYRING_ID, ctypes.c_long(_KEY_SPEC_USER_KEYRING), 0)
    return rc == -1 and ctypes.get_errno() == 1
