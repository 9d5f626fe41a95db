"""Trusted SpMM: the shared oracle (reference/sparse.py), a torch sparse CSR product."""
from perfbench_reference.sparse import spmm_csr


def reference(crow, col, val, b):
    return spmm_csr(crow, col, val, b)
