"""Scorch (github.com/bobbyyyan/scorch) as a variant of a sparse comparison.

Scorch is optional and has no licence: nothing of it is in this repository; users install it
from their own clone (`make scorch SCORCH_SRC=...`, docs/scorch.md).  It is imported here only,
and lazily, so perfbench works without it.

Scorch's `matmul` hands some format pairs (CSR x dense, ...) to hand-written ahead-of-time
kernels; we call `einsum` with an explicit output format instead, which always goes through
its compiler (CIN -> C++ -> load_inline).  The first call compiles (30-60 s here) and fills
Scorch's dispatch cache; `prepare` makes that call, outside any timed region, and reports its
time as the compile time.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import torch

from pathlib import Path

from ..core.errors import EnvironmentUnavailable, UsageError
from ..sparse.cases import CompileError, NotApplicable, SparseCase, output_shape, torch_layout

# The sparse operands' formats: dense, CSR and COO as Scorch's from_torch reads them from torch's
# layouts; DCSR (compressed rows of compressed columns) built from the CSR arrays (`_dcsr`).
FORMATS = ("dense", "csr", "coo", "dcsr")


class ScorchCompileError(CompileError):
    """Scorch could not compile the kernel: the message is the compiler's first error line."""


def scorch_module() -> Any:
    try:
        import scorch
    except ImportError as exc:
        raise EnvironmentUnavailable(
            f"Scorch is not importable ({exc}): install it from a clone with "
            "`make scorch SCORCH_SRC=/path/to/scorch` (docs/scorch.md)") from None
    return scorch


def version_of() -> dict[str, str]:
    """Which Scorch this process imports: its source tree and, when it is a git checkout, the
    commit (what a comparison of two checkouts reports)."""
    import subprocess
    src = Path(scorch_module().__file__).resolve().parent
    done = subprocess.run(["git", "-C", str(src), "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    commit = done.stdout.strip() + ("-dirty" if dirty else "") if done.returncode == 0 else "unknown"
    return {"path": str(src.parent.parent), "commit": commit}


def checkout_env(checkout: Path, base_env: dict[str, str], cache_root: Path) -> dict[str, str]:
    """The environment of a worker that must import the Scorch of `checkout`: its src/ first on
    the path (before the editable install's), and an extensions cache of its own."""
    import hashlib
    import os
    checkout = checkout.resolve()
    if not (checkout / "src" / "scorch" / "__init__.py").is_file():
        raise UsageError(f"{checkout}: not a Scorch checkout (no src/scorch/__init__.py)")
    key = hashlib.sha1(str(checkout).encode()).hexdigest()[:12]
    env = dict(base_env)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout / "src")] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TORCH_EXTENSIONS_DIR"] = str(cache_root / key)
    return env


def build_native(checkout: Path, say) -> None:
    """Scorch's ahead-of-time module (scorch_ops) is compiled at install; a checkout that was
    never installed gets it built in place once (what `pip install -e` would do, ~60 s)."""
    import subprocess
    import sys
    if any((checkout / "src").glob("scorch_ops*.so")):
        return
    say(f"building scorch_ops in {checkout} (once; ~60 s)")
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=checkout,
                          capture_output=True, text=True)
    if done.returncode != 0 or not any((checkout / "src").glob("scorch_ops*.so")):
        raise EnvironmentUnavailable(f"{checkout}: building scorch_ops failed: {first_error_line(done.stderr + done.stdout)}")


def first_error_line(text: str) -> str:
    """The compiler's first diagnostic ("main.cpp:12:5: error: ..."), else the first line that
    mentions an error, else the first line."""
    from ..task.user_files import compiler_diagnostic
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return compiler_diagnostic(text) or next((ln for ln in lines if "error" in ln.lower()),
                                             lines[0] if lines else "compile failed")[:300]


def _stensors(scorch: Any, fmt: str, operands: dict[str, torch.Tensor], sparse: tuple[str, ...]) -> list[Any]:
    # Named after the operands: Scorch names every tensor "tensor" by default, and two sparse
    # operands of one kernel (spmspm) must not share their arrays' names in the generated code.
    def one(name: str, t: torch.Tensor) -> Any:
        if name not in sparse:
            return scorch.from_torch(t.contiguous(), name)
        if fmt == "dcsr":
            return _dcsr(scorch, torch_layout("csr", t), name)
        return scorch.from_torch(torch_layout(fmt, t), name)
    return [one(name, t) for name, t in operands.items()]


def _dcsr(scorch: Any, csr: torch.Tensor, name: str) -> Any:
    """A CSR matrix as Scorch's DCSR (both levels compressed): the rows that hold anything, and
    their slices of the column indices (what TensorBench's dcsr operands are)."""
    from scorch.format import LevelFormat, LevelType, TensorFormat
    from scorch.storage import TensorIndex, TensorStorage

    crow, col = csr.crow_indices(), csr.col_indices()
    rows = torch.nonzero(crow[1:] > crow[:-1]).flatten().to(crow.dtype)
    pos1 = torch.cat([crow[:1], crow[1:][rows]])
    pos0 = torch.tensor([0, rows.numel()], dtype=crow.dtype)
    index = TensorIndex(tensor_format=TensorFormat(level_formats=[LevelFormat(mode=LevelType.COMPRESSED),
                                                                  LevelFormat(mode=LevelType.COMPRESSED)]),
                        mode_indices=[[pos0, rows], [pos1, col]], mode_order=[0, 1])
    return scorch.STensor(name=name, shape=tuple(csr.shape), storage=TensorStorage(index=index, value=csr.values()))


def prepare(expr: str, fmt: str, operands: dict[str, torch.Tensor], sparse: tuple[str, ...]) -> tuple[Callable[[], torch.Tensor], float]:
    """A callable computing einsum `expr` with Scorch's compiled kernel on these operands (dense
    output, what the dense gate compares), and the seconds its first call (the compile) took."""
    scorch = scorch_module()
    out_fmt = "d" * len(expr.split("->")[1])
    args = _stensors(scorch, fmt, operands, sparse)

    def run() -> torch.Tensor:
        return scorch.einsum(expr, *args, format=out_fmt).to_torch(in_place=False)

    start = time.perf_counter()
    try:
        run()
    except Exception as exc:  # noqa: BLE001 - Scorch reports compiler failures as whatever load_inline raised
        raise ScorchCompileError(first_error_line(str(exc)) or type(exc).__name__) from None
    return run, time.perf_counter() - start


def prepare_schedule(path: str, case: SparseCase, operands: dict[str, torch.Tensor]) -> tuple[Callable[[], torch.Tensor], float]:
    """A hand schedule: the file at `path` defines `cin(op, fmt, dtype)` returning Scorch's CIN
    statement for the op (tensor variables named like the operands: A, x -> y; A, B -> C), or
    None where it has no schedule.  Lowered and compiled here (not through einsum, whose
    dispatch cache ignores the schedule), then called directly."""
    from ..task.user_files import get_callable, load_module
    scorch = scorch_module()
    from scorch.compiler.cin_lowerer import CINLowerer
    from scorch.compiler.codegen import LLIRLowerer
    from scorch.utils import PROJECT_ROOT_DIR, _kernel_name, _load_kernel, get_extra_cflags, get_extra_ldflags

    op, fmt = case.op, case.fmt
    first = next(iter(operands.values()))
    stmt = get_callable(load_module(path), "cin", path)(op, fmt, first.dtype)
    if stmt is None:
        raise NotApplicable(f"scorch:{path} has no schedule for {op} on {fmt}")
    header = (Path(PROJECT_ROOT_DIR) / "csrc" / "header.cpp").read_text()
    start = time.perf_counter()
    try:
        cpp = LLIRLowerer().lower_llir(CINLowerer().lower_IndexStmt(stmt))
        module = _load_kernel(name=_kernel_name(header, cpp), cpp_sources=[header, cpp], functions=["evaluate"],
                              extra_cflags=get_extra_cflags(), extra_ldflags=get_extra_ldflags())
    except Exception as exc:  # noqa: BLE001 - lowering and load_inline raise many kinds
        raise ScorchCompileError(first_error_line(str(exc)) or type(exc).__name__) from None
    compile_s = time.perf_counter() - start
    tensors = _stensors(scorch, fmt, operands, case.sparse_operands)
    out_shape = list(output_shape(case))
    args = [out_shape] + [x for t in tensors for x in (list(t.shape), t.index.mode_indices, t.values)]

    def run() -> torch.Tensor:
        return module.evaluate(*args).storage.value.view(*out_shape)
    return run, compile_s
