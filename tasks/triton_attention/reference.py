"""Trusted causal attention: the shared oracle (reference/attention.py)."""
from perfbench_reference.attention import attention


def reference(q, k, v):
    return attention(q, k, v, causal=True)
