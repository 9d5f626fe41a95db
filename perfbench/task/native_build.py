"""Compile and cache the C++ extensions that task solutions call into.

The build directory is fixed (``$PERFBENCH_BUILD_DIR`` or
``~/.cache/perfbench/torch_extensions/<name>-<environment>``) rather than left to
torch's default so that every process of one Python environment, and every CI run
that restores the cache, reuses one build: a first compile costs ~35 s here, a
cached load well under a second.  A sandboxed worker sees the cache through a
private overlay: what it compiles itself is not kept, so a build lasts when a
trusted process made it (a test, `perfbench compare`, importing the solution).
``-O3`` without ``-march=native`` keeps that cached binary valid on any x86-64
machine the cache is restored onto.  One environment builds with one ninja, its own
(`_ninja_dir`), whatever the caller's PATH.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import re
import shutil
import sys
from types import ModuleType

_loaded: dict[str, ModuleType] = {}


def build_root() -> str:
    """The directory every perfbench extension build lives in (the sandbox overlays it)."""
    return os.environ.get("PERFBENCH_BUILD_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "perfbench",
                                                                 "torch_extensions")


def build_dir(name: str) -> str:
    """Where extension ``name`` is built and cached: ``$PERFBENCH_BUILD_DIR`` itself when set.

    Otherwise one directory per Python environment: the build's flags name the environment's
    torch include paths, so two checkouts (a CI clone and a working tree) sharing one directory
    rebuild each other's extension in turn, ~35-60 s a time, and a sandboxed worker (whose view
    of the cache is a private overlay) rebuilds it on every load.
    """
    if os.environ.get("PERFBENCH_BUILD_DIR"):
        return os.environ["PERFBENCH_BUILD_DIR"]
    import torch

    env = hashlib.sha256(f"{sys.prefix}|{sys.version}|{torch.__version__}".encode()).hexdigest()[:10]
    return os.path.join(build_root(), f"{name}-{env}")


def _ninja_dir() -> str | None:
    """Where the ninja that builds this environment's extensions is: the environment's own (the
    `ninja` wheel perfbench depends on, beside the interpreter) when it has one, else PATH's.

    Not whichever PATH finds first: two ninja versions read each other's build log as out of date,
    so a `make test` (the venv's bin first, ninja 1.13) after a bare `.venv/bin/python -m pytest`
    (/usr/bin/ninja 1.11) rebuilt the kernels every time, a minute each.
    """
    found = shutil.which("ninja", path=os.path.dirname(sys.executable)) or shutil.which("ninja")
    return os.path.dirname(found) if found else None


@contextlib.contextmanager
def _first_on_path(directory: str):
    """torch's builder runs `ninja` from PATH: put `directory` first for the build only."""
    before = os.environ.get("PATH")
    os.environ["PATH"] = directory + (os.pathsep + before if before else "")
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def load_cpp_extension(name: str, sources: list[pathlib.Path], functions: list[str]) -> ModuleType:
    """Build, or load the cached build of, extension ``name`` from ``sources`` exposing ``functions``.

    Memoized per ``name`` for the life of the process (a shared library cannot be
    re-imported under the same name), so every caller must pass the same sources
    and functions for a given name.
    """
    if name not in _loaded:
        ninja = _ninja_dir()
        if ninja is None:
            raise RuntimeError("C++ task kernels need ninja (pip install ninja, into this Python environment)")
        from torch.utils.cpp_extension import load_inline

        directory = build_dir(name)
        os.makedirs(directory, exist_ok=True)
        with _first_on_path(ninja):
            _loaded[name] = load_inline(
                name=name,
                cpp_sources=[pathlib.Path(s).read_text() for s in sources],
                functions=list(functions),
                extra_cflags=["-O3"],
                build_directory=directory,
                verbose=False,
            )
    module = _loaded[name]
    missing = [f for f in functions if not hasattr(module, f)]
    if missing:
        raise RuntimeError(f"extension {name!r} was loaded without {missing}; pass the same functions everywhere")
    return module


# An exported kernel is a top-level definition starting a line with `torch::Tensor NAME(`;
# helpers are `static` (or return something else), so they are not bound.
_EXPORTED = re.compile(r"^torch::Tensor\s+(\w+)\s*\(", re.MULTILINE)


def exported_functions(sources: list[pathlib.Path]) -> list[str]:
    """The kernels `sources` export, by the kernels/ convention above, in file order."""
    return [name for s in sources for name in _EXPORTED.findall(pathlib.Path(s).read_text())]


def load_kernel_dir(directory: str | pathlib.Path, name: str = "perfbench_cpu_kernels") -> ModuleType:
    """One extension built from every ``*.cpp`` in `directory`, binding every exported kernel.

    Every caller gets the same sources and function list, so all tasks share one cached build
    (a different list per task would rebuild, ~35 s, each time two tasks alternate).
    """
    sources = sorted(pathlib.Path(directory).glob("*.cpp"))
    if not sources:
        raise RuntimeError(f"no *.cpp kernels in {directory}")
    return load_cpp_extension(name, sources, exported_functions(sources))


class CudaKernels:
    """The ``extern "C" __global__`` kernels of one ``.cu`` file, compiled by CuPy's NVRTC.

    Launches go on torch's *current* stream (the timer's stream during a timed call) and take
    raw device pointers, so no array-interface conversion can synchronise inside a timed call.
    """

    def __init__(self, source: str | pathlib.Path, names: list[str]):
        import cupy  # optional: the `cuda` extra, or a GPU image that carries it

        self._cupy = cupy
        module = cupy.RawModule(code=pathlib.Path(source).read_text(), options=("--std=c++17",))
        # get_function compiles now (NVRTC, cached under $CUPY_CACHE_DIR): at import, not in a call.
        self._functions = {n: module.get_function(n) for n in names}

    def launch(self, name: str, grid: tuple, block: tuple, args: tuple) -> None:
        """Run kernel `name`; tensors in `args` pass as their data pointers, ints as int64."""
        import numpy as np
        import torch

        raw = tuple(np.uint64(a.data_ptr()) if isinstance(a, torch.Tensor) else
                    np.int64(a) if isinstance(a, int) else a for a in args)
        with self._cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            self._functions[name](grid, block, raw)
