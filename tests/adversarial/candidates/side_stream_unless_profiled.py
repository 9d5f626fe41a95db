"""CUDA only: honest while a profiler watches (the gate's side-stream check profiles one call per
size), otherwise its work on a side stream that starts with the timed window, so that the output
is written only after the end event.  The end-of-window digest catches what the profile never
saw (timing/cuda/checksum.py)."""
import torch

_side = torch.cuda.Stream() if torch.cuda.is_available() else None


def _profiled() -> bool:
    return bool(torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled())


def kernel(x, y):
    if _profiled():
        return 2 * x + y
    out = torch.zeros_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        acc = x.clone()
        for _ in range(20):        # the "real work", hidden from the events
            acc.mul_(1.0)
        torch.add(y, acc, alpha=2, out=out)
    return out
