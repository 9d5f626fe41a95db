"""`TorchGpu`: the timer's device operations on a real CUDA device, through torch and Triton.

Only constructed on a machine with a CUDA device; every branch of the timer that uses it is also
exercised on the CPU with `FakeGpu` (perfbench/testing/fake_gpu.py).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
from contextlib import AbstractContextManager
from typing import Any, Callable

from . import checksum
from . import kernels as cuda_kernels
from .gpu import GraphUnavailable

# Cycles the clock probe spins: ~100 us at 2 GHz, long enough for the 1 us global timer.
PROBE_CYCLES = 200_000


def _cudart() -> Any | None:
    """The CUDA runtime library, for the one call torch does not expose."""
    for name in ("cudart", "cudart64_12", "cudart64_13"):
        path = ctypes.util.find_library(name)
        if path:
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    import torch

    for path in glob.glob(os.path.join(os.path.dirname(torch.__file__), "..", "nvidia", "*", "lib", "libcudart.so*")):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


class TorchGpu:
    def __init__(self, device: str, hold_timeout_s: float):
        import torch

        self._torch = torch
        self._device = torch.device(device)
        torch.cuda.init()
        with torch.cuda.device(self._device):
            self.stream = torch.cuda.Stream(self._device)
            # [0] release word, [1] hold status, [2] spare, [3] padding; pinned = host-mapped (UVA).
            self._flags = torch.zeros(4, dtype=torch.int32).pin_memory()
            self._probe_out = torch.zeros(2, dtype=torch.int64, device=self._device)
        # The words themselves, written and read without a torch op (~10 us each) per call.
        base = self._flags.data_ptr()
        self._release = ctypes.c_int32.from_address(base)
        self._status = ctypes.c_int32.from_address(base + 4)
        self._timeout_ns = int(hold_timeout_s * 1e9)
        self._kernels = cuda_kernels.load()
        lib = _cudart()
        self._reset_l2 = getattr(lib, "cudaCtxResetPersistingL2Cache", None) if lib is not None else None
        self.persisting_l2_reset = self._reset_l2 is not None
        self.marking = False   # launch the window-end marker (only while a call is profiled)
        self._warm_up()

    def _warm_up(self) -> None:
        """Compile and load every kernel now: a first launch (a JIT compile, seconds) while the
        stream is held would outlast the hold."""
        with self.on_stream():
            self._release.value = 1
            self._kernels.hold[(1,)](self._flags, self._timeout_ns, num_warps=1)
            self._kernels.window_end[(1,)](self._flags, num_warps=1)
        self.clock_mhz()
        # The digest's weight vector is allocated here, not after a call's window while held.
        checksum.digest(self._torch.zeros(1, device=self._device))
        self.synchronize()

    def on_stream(self) -> AbstractContextManager:
        return self._torch.cuda.stream(self.stream)

    def synchronize(self) -> None:
        # Device-wide: whatever the call left on any stream is finished before the host clock reads.
        self._torch.cuda.synchronize(self._device)

    def reset_persisting_l2(self) -> None:
        # Lines marked persisting (an access-policy window the candidate set) survive a flush.
        if self._reset_l2 is not None:
            self._reset_l2()

    def hold(self) -> None:
        self._release.value = 0
        self._status.value = 0
        self._kernels.hold[(1,)](self._flags, self._timeout_ns, num_warps=1)

    def release(self) -> None:
        self._release.value = 1

    def hold_timed_out(self) -> bool:
        return self._status.value == cuda_kernels.STATUS_TIMED_OUT

    def record(self) -> Any:
        ev = self._torch.cuda.Event(enable_timing=True)
        ev.record(self.stream)
        return ev

    def mark_window_end(self) -> None:
        if self.marking:
            self._kernels.window_end[(1,)](self._flags, num_warps=1)

    def elapsed_ns(self, start: Any, end: Any) -> float:
        return start.elapsed_time(end) * 1e6

    def capture(self, work: Callable[[], Any]) -> tuple[Any, Any]:
        torch = self._torch
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph, stream=self.stream):
                out = work()
        except Exception as exc:  # noqa: BLE001 - whatever the call did that capture refuses
            torch.cuda.synchronize(self._device)
            raise GraphUnavailable(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        return graph, out

    def replay(self, graph: Any) -> None:
        graph.replay()

    def clock_mhz(self) -> float | None:
        with self._torch.cuda.stream(self.stream):
            self._kernels.clock_probe[(1,)](self._probe_out, PROBE_CYCLES, num_warps=1)
        self.stream.synchronize()
        cycles, ns = (int(x) for x in self._probe_out.tolist())
        return cycles * 1e3 / ns if ns > 0 else None
