"""Trusted matmul + bias + GELU (tanh form): the shared oracle (reference/matmul.py)."""
from perfbench_reference.matmul import matmul_bias_gelu


def reference(a, b, bias):
    return matmul_bias_gelu(a, b, bias)
