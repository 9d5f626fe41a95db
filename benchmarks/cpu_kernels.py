"""Real CPU kernels the benchmark scripts time (so every script measures the same thing)."""
import torch

ROWS, COLS = 512, 1024


def make_inputs(seed: int) -> tuple:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(ROWS, COLS, generator=g),)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Memory-bound-ish: one read, one write of a 2 MB tensor."""
    return torch.softmax(x, dim=1)


def softmax_with_extra(fraction: float):
    """softmax plus `fraction` more work on the same data: an injected, known slowdown."""
    extra_rows = max(1, round(ROWS * fraction))

    def kernel(x: torch.Tensor) -> torch.Tensor:
        torch.softmax(x[:extra_rows], dim=1)
        return torch.softmax(x, dim=1)

    return kernel
