"""A schedule of Scorch's compiler, lowered and compiled once at import (outside any timed call),
then called directly: no per-call dispatch through `scorch.einsum`.  The schedule here is
Scorch's own default one; put yours in `_schedule` (tile, reorder, add a workspace) to time it
against the baseline.  The CIN names must match the operands: C(i,k) = A(i,j) * B(j,k)."""
from pathlib import Path

import torch

import scorch
from scorch.compiler.cin import ForAll, IndexVar, TensorVar
from scorch.compiler.cin_lowerer import CINLowerer
from scorch.compiler.codegen import LLIRLowerer
from scorch.compiler.scheduler import Scheduler
from scorch.utils import PROJECT_ROOT_DIR, _kernel_name, _load_kernel, get_extra_cflags, get_extra_ldflags


def _schedule():
    i, j, k = IndexVar("i"), IndexVar("j"), IndexVar("k")
    c = TensorVar("C", fmt="dd", dtype=torch.float32)
    a = TensorVar("A", fmt="ds", dtype=torch.float32)   # CSR: dense rows, compressed columns
    b = TensorVar("B", fmt="dd", dtype=torch.float32)
    c[i, k] = a[i, j] * b[j, k]
    return Scheduler.auto_schedule(ForAll(i, ForAll(j, ForAll(k, c._assignment))))


def _compile():
    header = (Path(PROJECT_ROOT_DIR) / "csrc" / "header.cpp").read_text()
    cpp = LLIRLowerer().lower_llir(CINLowerer().lower_IndexStmt(_schedule()))
    return _load_kernel(name=_kernel_name(header, cpp), cpp_sources=[header, cpp], functions=["evaluate"],
                        extra_cflags=get_extra_cflags(), extra_ldflags=get_extra_ldflags())


_MODULE = _compile()


def kernel(crow, col, val, b):
    a = torch.sparse_csr_tensor(crow, col, val, (crow.numel() - 1, b.shape[0]), check_invariants=False)
    tensors = (scorch.from_torch(a, "A"), scorch.from_torch(b, "B"))
    out_shape = [a.shape[0], b.shape[1]]
    args = [out_shape] + [x for t in tensors for x in (list(t.shape), t.index.mode_indices, t.values)]
    return _MODULE.evaluate(*args).storage.value.view(*out_shape)
