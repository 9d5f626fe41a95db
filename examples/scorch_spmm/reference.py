"""Trusted CSR x dense product: the shared oracle (reference/sparse.py)."""
from perfbench_reference.sparse import spmm_csr


def reference(crow, col, val, b):
    return spmm_csr(crow, col, val, b)
