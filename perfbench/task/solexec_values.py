"""The values of a SOL-ExecBench input drawn `random`, from a secret seed.

The format says only an input's shape and dtype.  Upstream's harness also picks a value range by
the input's name (a norm's weight, a projection matrix, a mask, cos/sin tables...): the models'
tensors live in those ranges and the problems' tolerances were set on them.  perfbench keeps
those ranges, with one change: where upstream puts a constant (ones for a norm's weight, zeros
for its bias) perfbench draws values around it, since a constant input lets a kernel that
ignores it pass (an RMSNorm without its weight matches a weight of ones).  docs/tasks.md says so.

`domain` is torch-free (the format reads it to choose which inputs the input contract transforms:
those drawn unconstrained); `draw` makes the tensor.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

_WEIGHT_SUFFIXES = ("_weight", "_weights", "_proj", "_projs", "_proj_weight", "_proj_weights", "_weight_matrix")
_NORM_PREFIXES = ("_norm", "_layernorm", "layernorm", "norm")
_MASKS = ("x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask")
_BINARY_WORDS = ("binary", "{0, 1}", "0 or 1", "1.0 for valid", "0.0 for masked")
_POSITIVE = ("rstd", "std", "variance", "var")
_DECAY_RANGES = {"A_log": (-5.0, -1.0), "A": (-1.0, -0.001), "g": (-5.0, 0.0)}
_ROPE = ("cos", "sin", "cos_cached", "sin_cached", "rope_cos", "rope_sin")


def _norm_param(name: str, kind: str) -> bool:
    if name == f"norm_{kind}":
        return True
    if not name.endswith(f"_{kind}"):
        return False
    prefix = name[: -len(kind) - 1]
    return prefix.endswith(_NORM_PREFIXES[:3]) or prefix.rstrip("0123456789").endswith(_NORM_PREFIXES[3])


def domain(name: str, shape: tuple[int, ...] | None, description: str | None, floating: bool) -> str | None:
    """The value range an input's name asks for (upstream's names), or None: unconstrained."""
    if not floating or shape is None:
        return None
    desc = (description or "").lower()
    base = name.rstrip("0123456789")
    if _norm_param(name, "weight"):
        return "norm_weight"
    if _norm_param(name, "bias"):
        return "norm_bias"
    if len(shape) >= 2 and shape[-1] == shape[-2] and (
            name in ("attention_mask", "causal_mask") or ("attention mask" in desc and "causal" in desc)):
        return "causal_mask"
    if name in _MASKS or (name.endswith("_mask") and any(w in desc for w in _BINARY_WORDS)):
        return "binary_mask"
    if name in _ROPE:
        return "cos" if "cos" in name else "sin"
    if name in _POSITIVE or base in _POSITIVE or name.endswith(tuple(f"_{p}" for p in _POSITIVE)):
        return "positive"
    if name in ("A", "A_log", "A_cumsum", "g"):
        return name
    if name in ("attn_weights", "attention_weights", "routing_weights") or ("softmax" in desc and "output" in desc):
        return "probabilities"
    if len(shape) >= 2 and (name == "weight" or base == "weight" or name.endswith(_WEIGHT_SUFFIXES)
                            or base.endswith(_WEIGHT_SUFFIXES)):
        return "matrix"
    return None


def draw(name: str, shape: tuple[int, ...], dtype: "torch.dtype", description: str | None,
         g: "torch.Generator", device: Any) -> "torch.Tensor":
    """A random tensor for one input: its name's range where it has one (`domain`), else the
    dtype's: normal values (FP8 clamped to +-2), integers in upstream's ranges, random bools."""
    import torch

    def normal(*, dt: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(shape, generator=g, device=device, dtype=dt)

    def uniform(lo: float, hi: float) -> torch.Tensor:
        return torch.rand(shape, generator=g, device=device, dtype=torch.float32) * (hi - lo) + lo

    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g, device=device, dtype=torch.bool)
    if not dtype.is_floating_point:
        low, high = (-128, 128) if dtype == torch.int8 else (0, 256) if dtype == torch.uint8 else (-1024, 1024)
        return torch.randint(low, high, shape, generator=g, device=device, dtype=dtype)
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return normal().clamp_(-2.0, 2.0).to(dtype)
    kind = domain(name, shape, description, floating=True)
    if kind == "norm_weight":
        value = 1.0 + 0.1 * normal()
    elif kind == "norm_bias":
        value = 0.1 * normal()
    elif kind == "causal_mask":
        n = shape[-1]
        above = torch.triu(torch.ones(n, n, dtype=torch.bool, device=device), diagonal=1)
        value = torch.zeros(shape, dtype=torch.float32, device=device).masked_fill_(above, torch.finfo(dtype).min)
    elif kind == "binary_mask":
        value = torch.randint(0, 2, shape, generator=g, device=device).to(torch.float32)
    elif kind in ("cos", "sin"):
        value = getattr(torch, kind)(uniform(-math.pi, math.pi))
    elif kind == "positive":
        value = normal().abs_() + 0.1
    elif kind == "A_cumsum":
        value = uniform(-0.1, 0.0).cumsum(dim=-1)
    elif kind in _DECAY_RANGES:
        value = uniform(*_DECAY_RANGES[kind])
    elif kind == "probabilities":
        value = torch.softmax(normal(), dim=-1)
    elif kind == "matrix":
        value = normal() / math.sqrt(max(shape[-1], 1))
    else:
        value = normal()
    return value.to(dtype)
