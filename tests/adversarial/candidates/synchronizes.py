"""CUDA only: synchronises inside its call (as `.item()` or a host copy would).  Not an attack in
itself, but with the stream held it would wait for its own start event: the timer must give up
the hold and time it unheld (candidate.synchronizes), not hang."""
import torch


def kernel(x, y):
    out = torch.add(y, x, alpha=2)
    torch.cuda.synchronize()
    return out
