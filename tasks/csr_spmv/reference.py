"""Trusted SpMV: the shared oracle (reference/sparse.py), a torch sparse CSR product."""
from perfbench_reference.sparse import spmv_csr


def reference(crow, col, val, x):
    return spmv_csr(crow, col, val, x)
