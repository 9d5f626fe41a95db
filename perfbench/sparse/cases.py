"""Sparse comparison cases: which operation, on which operand formats, with which sparsity.

An operation is one of the named ones (spmv, spmm, spmspm, sddmm) or `einsum:EXPR`; each is an
einsum expression over its operands (`SparseCase.expression`), which is how Scorch receives it.

A `SparseCase` is a frozen spec; `operands(case)` draws its dense operands (seeded, with the
sparsity pattern applied to the sparse ones) and `reference(case, operands)` computes the answer
in float64 with dense PyTorch, the gate every variant (PyTorch's or Scorch's) must pass before
it is timed.  Patterns follow the shapes real sparse inputs take (TensorBench draws the same
kinds): uniform, power-law row lengths, banded, and rows left empty.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

# op -> (einsum over its operands, the operands' names in that order, the sparse ones).
# i has size m, j size k (the summed index), k size n: A is (m, k), B (k, n), x (k,), S (m, n).
OPS: dict[str, tuple[str, str, str]] = {
    "spmv": ("ij,j->i", "Ax", "A"),               # y(i) = A(i,j) * x(j)
    "spmm": ("ij,jk->ik", "AB", "A"),             # C(i,k) = A(i,j) * B(j,k)
    "spmspm": ("ij,jk->ik", "AB", "AB"),
    "sddmm": ("ik,ij,jk->ik", "SAB", "S"),        # C(i,k) = S(i,k) * A(i,j) * B(j,k)
}
FORMATS = ("dense", "csr", "dcsr", "coo")
PATTERNS = ("uniform", "power_law", "banded", "empty_rows")
EINSUM = "einsum:"   # op "einsum:EXPR", e.g. "einsum:ij,jk->ik": operands A, B, ...; A the sparse one
_EINSUM_NAMES, _EINSUM_SPARSE = "ABCDEFGH", "A"


class CaseError(ValueError):
    """A case that cannot be built (the message names the field)."""


class NotApplicable(Exception):
    """A variant has no implementation of this op / format (the message says which)."""


class CompileError(Exception):
    """A variant's kernel did not compile: the message is the compiler's first error line."""


@dataclass(frozen=True)
class SparseCase:
    op: str
    fmt: str                # the sparse operands' format
    density: float          # fraction of nonzeros in each sparse operand
    shape: tuple[int, int, int] = (1024, 1024, 64)   # m, k, n (n unused by spmv)
    pattern: str = "uniform"
    seed: int = 0
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.op.startswith(EINSUM):
            einsum_terms(self.op[len(EINSUM):], self.fmt)   # raises CaseError naming what is wrong
        elif self.op not in OPS:
            raise CaseError(f"op {self.op!r}: expected one of {', '.join(OPS)} or einsum:EXPR")
        if self.fmt not in FORMATS:
            raise CaseError(f"format {self.fmt!r}: expected one of {', '.join(FORMATS)}")
        if self.pattern not in PATTERNS:
            raise CaseError(f"pattern {self.pattern!r}: expected one of {', '.join(PATTERNS)}")
        if not 0 < self.density <= 1:
            raise CaseError(f"density {self.density}: expected a fraction in (0, 1]")
        if len(self.shape) != 3 or min(self.shape) < 1:
            raise CaseError(f"shape {self.shape}: expected three positive sizes m,k,n")
        if self.dtype not in ("float32", "float64"):
            raise CaseError(f"dtype {self.dtype!r}: expected float32 or float64")

    @property
    def label(self) -> str:
        m, k, n = self.shape
        if self.op.startswith(EINSUM):
            sizes = index_sizes(self)
            dims = ",".join(f"{i}={sizes[i]}" for i in sizes)
        else:
            dims = f"{m}x{k}" if self.op == "spmv" else f"{m}x{k}x{n}"
        return f"{self.op} {self.fmt} d={self.density:g} {dims} {self.pattern}"

    @property
    def expression(self) -> str:
        """The einsum form ("ij,jk->ik"), operands in `operands()` order."""
        return self.op[len(EINSUM):] if self.op.startswith(EINSUM) else OPS[self.op][0]

    @property
    def operand_names(self) -> str:
        return _EINSUM_NAMES if self.op.startswith(EINSUM) else OPS[self.op][1]

    @property
    def sparse_operands(self) -> tuple[str, ...]:
        return tuple(_EINSUM_SPARSE if self.op.startswith(EINSUM) else OPS[self.op][2])

    @property
    def reduction_length(self) -> int:
        """How many products each output element sums: the tolerance grows with it."""
        inputs, out = self.expression.split("->")
        sizes = index_sizes(self)
        return math.prod(sizes[i] for i in dict.fromkeys(inputs.replace(",", "")) if i not in out)


def einsum_terms(expr: str, fmt: str) -> tuple[list[str], str]:
    """(input index strings, output index string) of an einsum expression, checked: letters only,
    at most three distinct indices (sized m, k, n by first appearance), every output index in
    some input, none repeated within a term, and a matrix first (the sparse operand)."""
    inputs, arrow, out = expr.partition("->")
    terms = inputs.split(",")
    if not arrow or not all(terms) or not out:
        raise CaseError(f"einsum {expr!r}: expected INPUTS->OUTPUT, e.g. ij,jk->ik (a non-scalar output)")
    if not all(t.isalpha() and t.islower() and len(set(t)) == len(t) for t in (*terms, out)):
        raise CaseError(f"einsum {expr!r}: each term is distinct lower-case index letters")
    letters = dict.fromkeys("".join(terms))
    if len(letters) > 3:
        raise CaseError(f"einsum {expr!r}: at most three distinct indices (sized by --shape M,K,N)")
    if not set(out) <= set(letters):
        raise CaseError(f"einsum {expr!r}: output index not in any input")
    if len(terms[0]) != 2:
        raise CaseError(f"einsum {expr!r}: the first operand, the sparse one, must be a matrix (two indices)")
    return terms, out


def index_sizes(case: SparseCase) -> dict[str, int]:
    """Each index letter's size.  The named ops: i=m, j=k (the summed index), k=n; einsum:EXPR:
    m, k, n to its indices in order of first appearance."""
    if not case.op.startswith(EINSUM):
        return dict(zip("ijk", case.shape))
    terms = case.expression.split("->")[0].split(",")
    return dict(zip(dict.fromkeys("".join(terms)), case.shape))


def sparsity_mask(rows: int, cols: int, density: float, pattern: str, rng: np.random.Generator) -> np.ndarray:
    """A boolean (rows, cols) mask with about density * rows * cols True entries."""
    target = max(1, round(density * rows * cols))
    if pattern == "banded":   # a diagonal band wide enough for the target count
        width = max(0, math.ceil(target / max(rows, 1) / 2))
        i, j = np.ogrid[:rows, :cols]
        centre = (i * cols) // max(rows, 1)
        return np.abs(j - centre) <= width
    if pattern == "uniform":
        weights = np.ones(rows)
    elif pattern == "power_law":   # row lengths ~ 1/(r+1): a few long rows, many short ones
        weights = 1.0 / np.arange(1, rows + 1)
        rng.shuffle(weights)
    else:                          # empty_rows: half the rows hold everything
        weights = (rng.random(rows) < 0.5).astype(float)
        weights[rng.integers(rows)] = 1.0
    lengths = np.minimum(cols, rng.multinomial(target, weights / weights.sum()))
    mask = np.zeros((rows, cols), dtype=bool)
    for r in np.flatnonzero(lengths):
        mask[r, rng.choice(cols, size=lengths[r], replace=False)] = True
    return mask


def operand_shapes(case: SparseCase) -> dict[str, tuple[int, ...]]:
    """Each operand's name and shape, in the expression's order: A, x (spmv); S, A, B (sddmm);
    A, B (spmm, spmspm); A, B, C, ... (einsum:EXPR)."""
    sizes = index_sizes(case)
    terms = case.expression.split("->")[0].split(",")
    return {name: tuple(sizes[i] for i in term) for name, term in zip(case.operand_names, terms)}


def output_shape(case: SparseCase) -> tuple[int, ...]:
    sizes = index_sizes(case)
    return tuple(sizes[i] for i in case.expression.split("->")[1])


def operands(case: SparseCase) -> dict[str, torch.Tensor]:
    """The case's operands as dense tensors (zeros where the pattern has none)."""
    rng = np.random.default_rng(case.seed)
    shapes = operand_shapes(case)
    sparse = case.sparse_operands
    out = {}
    for name, shape in shapes.items():
        values = rng.standard_normal(shape)
        if name in sparse:
            values = values * sparsity_mask(*shape, case.density, case.pattern, rng)
        out[name] = torch.from_numpy(values).to(getattr(torch, case.dtype))
    return out


def dense_fn(case: SparseCase, d: dict[str, torch.Tensor]) -> Callable[[], torch.Tensor]:
    """The op on dense operands `d`, by dense PyTorch: the torch-dense variant (float32) and, in
    float64, the reference.  The named ops call the BLAS-backed products a user would write."""
    if case.op.startswith(EINSUM):
        args = tuple(d.values())
        return lambda: torch.einsum(case.expression, *args)
    if case.op == "spmv":
        return lambda: d["A"] @ d["x"]
    if case.op == "sddmm":
        return lambda: d["S"] * (d["A"] @ d["B"])
    return lambda: d["A"] @ d["B"]


def reference(case: SparseCase, ops: dict[str, torch.Tensor]) -> torch.Tensor:
    """The answer in float64, by dense PyTorch (the gate's oracle)."""
    return dense_fn(case, {name: t.to(torch.float64) for name, t in ops.items()})()


def tolerances(dtype: str, k: int) -> tuple[float, float]:
    """(rtol, atol) for a result summed over k products: Scorch compiles with -ffast-math
    (reassociated sums), so the bound grows with the reduction length."""
    eps = float(torch.finfo(getattr(torch, dtype)).eps)
    return 64 * eps * math.sqrt(k), 64 * eps * math.sqrt(k)


def torch_layout(fmt: str, t: torch.Tensor) -> torch.Tensor:
    """A dense operand in torch's layout for `fmt` (dense, csr, coo); what torch.sparse runs on
    and what Scorch's from_torch reads without a conversion kernel."""
    if fmt == "dense":
        return t.contiguous()
    with warnings.catch_warnings():   # "CSR support is in beta": noise in a comparison's output
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        if fmt == "csr":
            return t.to_sparse_csr()
        if fmt == "coo":
            return t.to_sparse_coo().coalesce()
    raise NotApplicable(f"no torch layout for {fmt}")
