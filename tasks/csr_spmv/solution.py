"""SpMV with a single-threaded C++ CSR kernel: one pass over the nonzeros, no temporaries.

The kernel lives in kernels/cpu/spmv_csr.cpp and is compiled (once, then cached) into the
repo's single extension, perfbench_cpu_kernels, built from every kernels/cpu/*.cpp file.
"""
from pathlib import Path

import torch

from perfbench.task.native_build import load_kernel_dir

# Built (or loaded from the cache) at import, so a first compile happens while the worker loads
# the file, under the load timeout, not inside a timed or checked call.
_EXT = load_kernel_dir(Path(__file__).resolve().parents[2] / "kernels" / "cpu")


def kernel(crow: torch.Tensor, col: torch.Tensor, val: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return _EXT.spmv_csr(crow, col, val, x)
