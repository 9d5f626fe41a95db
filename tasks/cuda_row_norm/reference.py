"""Trusted row norms: the shared oracle (reference/reductions.py)."""
from perfbench_reference.reductions import row_l2_norm


def reference(x):
    return row_l2_norm(x)
