"""Trusted transpose: the shared oracle (reference/layout.py)."""
from perfbench_reference.layout import transpose


def reference(x):
    return transpose(x)
