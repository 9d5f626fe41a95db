"""A seccomp filter every worker (and zygote) installs on itself before task code runs: the
kernel's key management calls, `add_key`, `request_key` and `keyctl`, and `userfaultfd` fail
with EPERM.

Why keyrings: a uid's kernel keyring is not part of any namespace the sandbox makes.  Every
worker runs as the same uid (`nobody`, or root where the uid cannot switch), so a key one
candidate added was readable by the next, in another score, and stayed after both (#39): a
channel between candidates, between rows of a batch, and between users.

Why userfaultfd: a page registered with it blocks every access until the registering process
serves the fault, the scorer's reads of a frozen worker's memory included (#39: such a read hung
until the worker was killed).  The scorer's reads also have a deadline (wire/arena.py); this filter
keeps a candidate from reaching it.

No kernel, Python or torch code an honest kernel runs uses either.  The filter is inherited by
every child and cannot be removed; it also refuses syscalls made through another ABI (32-bit or
x32 entry points), which could otherwise reach the same calls under other numbers.
`keyrings_denied` and `userfaultfd_denied` are the worker's probes.
"""
from __future__ import annotations

import ctypes
import os
import platform

from ...system import host

# (AUDIT_ARCH of the native ABI, (add_key, request_key, keyctl, userfaultfd) syscall numbers)
_NATIVE = {"x86_64": (0xC000003E, (248, 249, 250, 323)), "aarch64": (0xC00000B7, (217, 218, 219, 282))}
_X32_BIT = 0x40000000

_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1   # SECCOMP_RET_ERRNO | EPERM
# classic BPF opcodes
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_OFFSET_NR, _OFFSET_ARCH = 0, 4   # struct seccomp_data
_KEYCTL_GET_KEYRING_ID, _KEY_SPEC_USER_KEYRING = 0, -4
_O_CLOEXEC_NONBLOCK = os.O_CLOEXEC | os.O_NONBLOCK


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _program(arch: int, numbers: tuple[int, ...]) -> list[tuple[int, int, int, int]]:
    """(code, jt, jf, k) per instruction; jumps count instructions after the next one."""
    n = len(numbers)
    return [
        (_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        (_JEQ_K, 1, 0, arch),            # native ABI: on to the number; else refused
        (_RET_K, 0, 0, _RET_EPERM),
        (_LD_W_ABS, 0, 0, _OFFSET_NR),
        (_JGE_K, n + 1, 0, _X32_BIT),    # x32 entry points: refused
        *((_JEQ_K, n - i, 0, nr) for i, nr in enumerate(numbers)),   # each denied call: to the EPERM
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_EPERM),
    ]


def deny_syscalls() -> bool:
    """Install the filter on this process (and so on every thread and child it makes later;
    call it while single-threaded).  False where the machine or kernel cannot."""
    native = _NATIVE.get(platform.machine())
    if native is None:
        return False
    insns = _program(*native)
    array = (_SockFilter * len(insns))(*(_SockFilter(*i) for i in insns))
    prog = _SockFprog(len(insns), array)
    # Unprivileged filters need no_new_privs (set by the sandbox already; harmless again).
    if host.prctl(host.PR_SET_NO_NEW_PRIVS, 1) != 0:
        return False
    return host.prctl(host.PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog)) == 0


def _native_call(which: int, *args: object) -> int | None:
    """Syscall `which` of the native ABI's list in _NATIVE, called; None where it cannot be."""
    native = _NATIVE.get(platform.machine())
    syscall = host.function("syscall")
    return None if native is None or syscall is None else syscall(native[1][which], *args)


def keyrings_denied() -> bool:
    """Whether this process's keyctl fails with EPERM (the filter holds), by a call that
    changes nothing: the id of the user keyring, not created if absent."""
    rc = _native_call(2, _KEYCTL_GET_KEYRING_ID, ctypes.c_long(_KEY_SPEC_USER_KEYRING), 0)
    return rc == -1 and host.errno() == 1


def userfaultfd_denied() -> bool:
    """Whether this process's userfaultfd fails with EPERM (the filter holds, or the kernel
    refuses this unprivileged process anyway); a descriptor it did get is closed again."""
    fd = _native_call(3, _O_CLOEXEC_NONBLOCK)
    if fd is not None and fd >= 0:
        os.close(fd)
        return False
    return fd == -1 and host.errno() == 1
