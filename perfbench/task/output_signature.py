"""Describing kernel outputs: a compact, comparable signature (structure, shapes, dtypes)."""
from __future__ import annotations

from typing import Any


def as_outputs(obj: Any) -> list[Any]:
    """A kernel returns a tensor or a tuple of tensors; always work with a list.

    Only a tuple means several outputs: a list is one (wrong) output, not a tensor.
    """
    return list(obj) if type(obj) is tuple else [obj]


def signature(obj: Any) -> str:
    """'f32[4, 8]@cpu', '(f32[4]@cpu, i64[]@cpu)', 'None', 'int' ... for messages and equality."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(obj, torch.Tensor):
        dt = str(obj.dtype).replace("torch.", "")
        return f"{dt}{list(obj.shape)}@{obj.device.type}"
    if isinstance(obj, (tuple, list)):
        inner = ", ".join(signature(x) for x in obj)
        return f"({inner})" if isinstance(obj, tuple) else f"[{inner}]"
    if obj is None:
        return "None"
    return type(obj).__name__
