"""Activation family: GELU in its tanh form, alone and as a bias epilogue."""
import math

import torch

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): the approximation GPT-2 and most fused
    epilogues use (torch.nn.functional.gelu(approximate="tanh"))."""
    return 0.5 * x * (1.0 + torch.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(x + bias), the bias broadcast along the last dimension."""
    return gelu_tanh(x + bias)
