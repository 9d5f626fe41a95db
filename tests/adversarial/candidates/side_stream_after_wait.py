"""CUDA only: a side stream that waits for the timed stream, so its work starts once the hold is
released and runs beside an empty timed window (the events read ~0)."""
import torch

_side = torch.cuda.Stream() if torch.cuda.is_available() else None


def kernel(x, y):
    out = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        for _ in range(20):
            torch.add(y, x, alpha=2, out=out)
    return out
