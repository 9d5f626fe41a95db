"""What selfcheck measures with, per device: a timer, kernels of known cost, a load generator.

Selfcheck's sections only talk to a `Backend`, so the CUDA path is exercised in tests by a
backend built from fakes, and on a GPU by the real one.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, ContextManager

from ..timing.cuda.timer import CudaEventTimer
from ..timing.timers import CpuTimer, Timer
from .cpu_load import CpuLoad

# (kind: "memory" | "compute" | "null", extra work fraction) -> (fn, make_inputs).  `extra` adds
# that fraction of the work on a slice of the input and discards it: an injected, known slowdown.
KernelFactory = Callable[[str, float], tuple[Callable[..., Any], Callable[[int], tuple]]]


@dataclass(frozen=True)
class Backend:
    device: str
    timer: Timer
    make_kernel: KernelFactory            # (kind: "memory"|"compute"|"null", work scale) -> (fn, make_inputs)
    load: Callable[[], ContextManager[Any]]   # a competing load; .start() begins it half-way
    flusher: Callable[[], Callable[[], None]] | None   # builds a cache flusher
    cache_bytes: int


def _with_extra(fn: Callable[[Any], Any], extra: float) -> Callable[[Any], Any]:
    if extra <= 0:
        return fn

    def slower(x):
        k = max(1, int(x.shape[0] * extra))
        fn(x[:k])
        return fn(x)
    return slower


def _cpu_kernels(kind: str, extra: float):
    import torch

    if kind == "null":
        return (lambda: None), (lambda seed: ())
    gen = lambda seed: torch.Generator().manual_seed(seed)  # noqa: E731
    if kind == "memory":   # streams 8 MB in, 8 MB out: bandwidth-bound, larger than most L2s
        return _with_extra(lambda x: x * 2.0, extra), (lambda seed: (torch.randn(1 << 21, generator=gen(seed)),))
    # compute-bound: a batch of small matmuls
    return _with_extra(lambda a: a @ a, extra), (lambda seed: (torch.randn(64, 64, 64, generator=gen(seed)),))


def cpu_backend() -> Backend:
    from ..timing.flush import cpu_cache_flusher, host_llc_bytes

    return Backend("cpu", CpuTimer(), _cpu_kernels, CpuLoad, cpu_cache_flusher, host_llc_bytes())


class _GpuLoad:
    """A concurrent load kernel on its own stream, started on demand (the GPU's 'neighbour')."""

    def __init__(self, device: str):
        self._device = device
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _run(self) -> None:
        import torch

        stream = torch.cuda.Stream(self._device)
        a = torch.randn(4096, 4096, device=self._device)
        with torch.cuda.stream(stream):
            while not self._stop.is_set():
                a = torch.tanh(a @ a)
                stream.synchronize()

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def cuda_backend(device: str) -> Backend:
    import torch

    from ..timing.flush import cuda_l2_flusher

    def kernels(kind: str, extra: float):
        if kind == "null":
            return (lambda x: x), (lambda seed: (torch.empty(1, device=device),))
        if kind == "memory":
            return _with_extra(lambda x: x * 2.0, extra), (lambda seed: (torch.randn(1 << 26, device=device),))
        return _with_extra(lambda a: a @ a, extra), (lambda seed: (torch.randn(16, 1024, 1024, device=device),))

    l2 = int(getattr(torch.cuda.get_device_properties(torch.device(device)), "L2_cache_size", 0))
    return Backend(device, CudaEventTimer(device, digests=False), kernels, lambda: _GpuLoad(device),
                   lambda: cuda_l2_flusher(device), l2)
