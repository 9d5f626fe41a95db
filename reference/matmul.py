"""Dense matrix products, alone and with a fused-epilogue shape."""
import torch

from .activations import bias_gelu


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """C = A @ B for 2-D A [m, k] and B [k, n]."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs [m, k] @ [k, n], got {tuple(a.shape)} @ {tuple(b.shape)}")
    return a @ b


def matmul_bias_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu_tanh(A @ B + bias), the product taken in the inputs' dtype (float64 for the oracle)."""
    return bias_gelu(matmul(a, b), bias)
