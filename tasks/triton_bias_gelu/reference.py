"""Trusted bias + GELU (tanh form): the shared oracle (reference/activations.py)."""
from perfbench_reference.activations import bias_gelu


def reference(x, bias):
    return bias_gelu(x, bias)
