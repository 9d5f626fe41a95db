"""The implementations a sparse comparison can time: `torch-dense` (torch.matmul on dense
operands), `torch-sparse` (torch.sparse on CSR / COO operands), `scorch` (Scorch's compiled
kernel, adapters/scorch.py; `scorch:FILE` a hand schedule) and `py:FILE` (your own: FILE defines `prepare(op, fmt, operands)`
returning a no-argument callable, or None where it has no implementation).  Each is prepared once per case (conversions and compilation
outside any timed region) into a callable that returns a dense torch tensor, which the gate
compares with the dense float64 reference before anything is timed."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from .cases import EINSUM, CompileError, NotApplicable, SparseCase, dense_fn, tolerances, torch_layout

VARIANTS = ("torch-dense", "torch-sparse", "scorch")
OK, INCORRECT, COMPILE_ERROR, NOT_APPLICABLE = "ok", "incorrect", "compile_error", "not_applicable"


@dataclass(frozen=True)
class Prepared:
    variant: str
    fn: Callable[[], torch.Tensor]   # the op on the case's operands, prepared; returns a dense tensor
    compile_s: float                 # preparation time (Scorch: its JIT compile), never timed


def _torch_sparse(fmt: str, t: torch.Tensor) -> torch.Tensor:
    if fmt not in ("csr", "coo"):
        raise NotApplicable(f"torch-sparse has no {fmt} format")
    return torch_layout(fmt, t)


def prepare(variant: str, case: SparseCase, operands: dict[str, torch.Tensor]) -> Prepared:
    start = time.perf_counter()
    sparse = case.sparse_operands
    if variant == "torch-dense":
        ops = {k: v.contiguous() for k, v in operands.items()}
        fn = dense_fn(case, ops)
    elif variant == "torch-sparse":
        if case.op.startswith(EINSUM):
            raise NotApplicable("torch-sparse has no general einsum")
        ops = {k: (_torch_sparse(case.fmt, v) if k in sparse else v.contiguous()) for k, v in operands.items()}
        fn = _sparse_fn(case.op, ops)
    elif variant.startswith("py:"):
        fn = _user_variant(variant[3:], case, operands)
    elif variant.startswith("scorch:"):
        from ..adapters import scorch
        fn, compile_s = scorch.prepare_schedule(variant[7:], case, operands)
        return Prepared(variant, fn, compile_s)
    elif variant == "scorch":
        from ..adapters import scorch
        if case.fmt not in scorch.FORMATS:
            raise NotApplicable(f"scorch: the {case.fmt} format is not wired up yet")
        fn, compile_s = scorch.prepare(case.expression, case.fmt, operands, sparse)
        return Prepared(variant, fn, compile_s)
    else:
        raise ValueError(f"unknown variant {variant!r} (known: {', '.join(VARIANTS)}, py:FILE)")
    return Prepared(variant, fn, time.perf_counter() - start)


def _user_variant(path: str, case: SparseCase, operands: dict[str, torch.Tensor]) -> Callable[[], torch.Tensor]:
    from ..task.user_files import compiler_diagnostic, get_callable, load_module
    try:
        prepare_fn = get_callable(load_module(path), "prepare", path)
        fn = prepare_fn(case.op, case.fmt, dict(operands))   # compiles, converts: untimed
    except Exception as exc:  # noqa: BLE001 - a C++ build (load_inline) fails with whatever it raises
        diagnostic = compiler_diagnostic(str(exc))
        if diagnostic is None:
            raise
        raise CompileError(diagnostic) from None
    if fn is None:
        raise NotApplicable(f"py:{path} has no {case.op} on {case.fmt}")
    return fn


def _sparse_fn(op: str, d: dict[str, torch.Tensor]) -> Callable[[], torch.Tensor]:
    if op == "spmv":
        return lambda: torch.mv(d["A"], d["x"])
    if op == "spmm":
        return lambda: torch.sparse.mm(d["A"], d["B"])
    if op == "spmspm":
        return lambda: torch.sparse.mm(d["A"], d["B"]).to_dense()
    s = d["S"]
    if s.layout != torch.sparse_csr:
        raise NotApplicable("torch-sparse: sddmm needs csr (torch.sparse.sampled_addmm)")

    def sddmm() -> torch.Tensor:   # (A @ B) sampled at S's pattern, times S's values
        sampled = torch.sparse.sampled_addmm(s, d["A"], d["B"], beta=0.0)
        return torch.sparse_csr_tensor(s.crow_indices(), s.col_indices(), sampled.values() * s.values(),
                                       s.shape, check_invariants=False).to_dense()
    return sddmm


def gate(p: Prepared, case: SparseCase, ref: torch.Tensor) -> str:
    """'' when the variant's output matches the dense float64 reference, else what is wrong."""
    out = p.fn()
    if tuple(out.shape) != tuple(ref.shape):
        return f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    rtol, atol = tolerances(case.dtype, case.reduction_length)
    got = out.to(torch.float64)
    if not torch.allclose(got, ref, rtol=rtol, atol=atol):
        return f"max abs error {(got - ref).abs().max().item():.3g} (rtol {rtol:.2g}, atol {atol:.2g})"
    return ""
