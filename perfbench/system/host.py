"""The C library calls perfbench makes itself (ctypes), in one place with named constants:
prctl, mallopt, malloc_trim; and which OpenMP runtime torch brings.  Linux and glibc; where a call is missing each returns a failure
value, never raises, so a caller decides what a missing call costs (a layer recorded as absent,
or only speed).  The C library is the process's own symbols (dlopen(NULL)), loaded once, with
errno kept for `errno()`."""
from __future__ import annotations

import ctypes
import functools
import re
from pathlib import Path
from typing import Any, Callable

# prctl(2) options (linux/prctl.h)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_GET_SECUREBITS = 27
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# mallopt(3) parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


@functools.cache
def libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except (OSError, TypeError):   # (no dlopen(NULL) on this platform)
        return None


@functools.cache
def function(name: str, argtypes: tuple | None = None, restype: Any = ctypes.c_int) -> Callable | None:
    """A C library function, typed where `argtypes` is given (else variadic ints), or None."""
    lib = libc()
    fn = getattr(lib, name, None) if lib is not None else None
    if fn is not None:
        if argtypes is not None:
            fn.argtypes = argtypes
        fn.restype = restype
    return fn


def errno() -> int:
    """The errno the last call through `libc()` left."""
    return ctypes.get_errno()


def prctl(option: int, *args: Any) -> int:
    """prctl(option, args...), the missing arguments 0: its return value (-1 where there is none)."""
    fn = function("prctl")
    return -1 if fn is None else fn(option, *(list(args) + [0, 0, 0, 0])[:4])


def mallopt(param: int, value: int) -> bool:
    """mallopt(param, value): whether glibc took it (False where the C library is not glibc)."""
    fn = function("mallopt", (ctypes.c_int, ctypes.c_int))
    return fn is not None and fn(param, value) == 1


def malloc_trim() -> None:
    """Hand the heap's free pages back to the kernel (glibc; elsewhere nothing)."""
    fn = function("malloc_trim", (ctypes.c_size_t,))
    if fn is not None:
        fn(0)


def openmp_runtime() -> str:
    """The OpenMP runtime torch links against (libgomp, libiomp5, libomp), from its shared
    libraries on disk; 'unknown' if torch is not installed where expected."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return "unknown"
    names = set()
    for lib_dir in (Path(spec.origin).parent / "lib", Path(spec.origin).parent.parent / "torch.libs"):
        if lib_dir.is_dir():
            names |= {m.group(1) for f in lib_dir.iterdir() if (m := re.match(r"(lib(?:g|i)?omp\d*)", f.name))}
    return ", ".join(sorted(names)) or "unknown"
