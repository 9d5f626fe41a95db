"""SpMM with a single-threaded C++ CSR kernel (kernels/cpu/spmm_csr.cpp): per nonzero, one
vectorised axpy of a row of b into the output row; no [nnz, k] temporary."""
from pathlib import Path

import torch

from perfbench.task.native_build import load_kernel_dir

# Built (or loaded from the cache) at import: a first compile runs under the load timeout.
_EXT = load_kernel_dir(Path(__file__).resolve().parents[2] / "kernels" / "cpu")


def kernel(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return _EXT.spmm_csr(crow, col, val, b)
