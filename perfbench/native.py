"""Compile and cache the C++ extensions that task solutions call into.

The build directory is fixed (``$PERFBENCH_BUILD_DIR`` or
``~/.cache/perfbench/torch_extensions/<name>``) rather than left to torch's
default so that every process, and every CI run that restores the cache, reuses
one build: a first compile costs ~35 s here, a cached load well under a second.
``-O3`` without ``-march=native`` keeps that cached binary valid on any x86-64
machine the cache is restored onto.
"""
from __future__ import annotations

import os
import pathlib
import shutil
from types import ModuleType

_loaded: dict[str, ModuleType] = {}


def build_root() -> str:
    """The directory every perfbench extension build lives in (the sandbox overlays it)."""
    return os.environ.get("PERFBENCH_BUILD_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "perfbench",
                                                                 "torch_extensions")


def build_dir(name: str) -> str:
    """Where extension ``name`` is built and cached: ``$PERFBENCH_BUILD_DIR`` itself when set."""
    return os.environ.get("PERFBENCH_BUILD_DIR") or os.path.join(build_root(), name)


def load_cpp_extension(name: str, sources: list[pathlib.Path], functions: list[str]) -> ModuleType:
    """Build, or load the cached build of, extension ``name`` from ``sources`` exposing ``functions``.

    Memoized per ``name`` for the life of the process (a shared library cannot be
    re-imported under the same name), so every caller must pass the same sources
    and functions for a given name.
    """
    if name not in _loaded:
        if shutil.which("ninja") is None:
            raise RuntimeError("C++ task kernels need ninja on PATH (pip install ninja)")
        from torch.utils.cpp_extension import load_inline

        directory = build_dir(name)
        os.makedirs(directory, exist_ok=True)
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
