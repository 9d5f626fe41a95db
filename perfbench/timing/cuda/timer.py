"""CUDA timing for 2-50 us kernels: events on a held stream, no host synchronisation inside them.

Per call, on a dedicated stream S made current (a candidate that launches on
`torch.cuda.current_stream()` lands on it):

    synchronize; reset persisting L2 lines; flush L2 (on S); hold S (a one-thread kernel that
    spins on a host-mapped flag); record start; call; record end; release the flag; synchronize

The GPU reaches the start event only after the host has enqueued the whole call, so the host's
launch latency is not in the window, and nothing between the two events waits for the host.  The
previous timer synchronised the device inside the window (to count side-stream work): a host
round trip of ~5-40 us added to both sides, which pulls every speedup of a microsecond kernel
toward 1.  Work hidden from the window is caught another way: the block's host clock (bounded by
a device-wide synchronize after each call) against its event time (tamper.unaccounted_time), and
one profiled call per size in the gate (side_streams.py).

Right after the end event, still on S and still held, the timer enqueues a digest of each output
(timing/cuda/checksum.py): the bytes as they stand when the window closes.  The scorer digests the
output it fetches; a difference is work that wrote the output after the window
(`tamper.side_stream`), which the profiled gate call cannot catch in a candidate that behaves
while profiled.

A call that synchronises while S is held cannot finish: the hold gives up after
`hold_timeout_s`, and from then on this timer times calls without it (`fallback =
"candidate.synchronizes"`: launch latency counted again, to this side's cost).

`mode="graph"` (launch-bound kernels, per task or chosen by `choose_mode`): the block's calls are
captured into one CUDA graph behind their flushes, and a graph of the flushes alone is
subtracted; a call that cannot be captured falls back to events (`candidate.not_capturable`).
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from ...task.output_signature import as_outputs
from .checksum import digest, digestible
from .modes import EVENT_RESOLUTION_NS
from ..timers import BlockTiming
from .gpu import GraphUnavailable, Gpu

# How long a held stream waits for the host.  Enqueuing one call takes microseconds to a few
# milliseconds of Python; a call still not enqueued after this is waiting on the device itself.
HOLD_TIMEOUT_S = 0.5


class CudaEventTimer:
    """Events around each call on a held stream; see the module docstring."""

    name = "cuda_events"
    simulated = False

    def __init__(self, device: str = "cuda", *, mode: str = "events", hold_timeout_s: float = HOLD_TIMEOUT_S,
                 gpu: Gpu | None = None, digests: bool = True):
        if mode not in ("events", "graph"):
            raise ValueError(f"CudaEventTimer mode must be events or graph, got {mode!r}")
        if gpu is None:
            from .torch_gpu import TorchGpu  # deferred: importing perfbench must not touch the GPU

            gpu = TorchGpu(device, hold_timeout_s)
        self._gpu = gpu
        self._hold_timeout_s = hold_timeout_s
        self.mode = mode
        self.fallbacks: list[tuple[str, str]] = []   # (reason code, message), in the order taken
        self._held = True          # False once a call synchronised while held
        self._capturable = True    # False once a call could not be captured
        self.digests = digests     # digest each call's outputs right after its end event

    @property
    def fallback(self) -> str | None:
        """The first fallback's reason code (candidate.synchronizes, candidate.not_capturable)."""
        return self.fallbacks[0][0] if self.fallbacks else None

    @property
    def fallback_message(self) -> str | None:
        return "; ".join(f"{code}: {msg}" for code, msg in self.fallbacks) or None

    @property
    def mode_used(self) -> str:
        """What the blocks are timed with now: graph, events, or events-unheld (launch latency in)."""
        if self.mode == "graph" and self._capturable:
            return "graph"
        return "events" if self._held else "events-unheld"

    def time_block(self, fn: Callable[..., Any], inputs: Sequence[tuple],
                   flush: Callable[[], None] | None) -> BlockTiming:
        gpu = self._gpu
        gpu.synchronize()
        t0 = time.perf_counter_ns()
        result = None
        if self.mode_used == "graph":
            try:
                result = self._graph_block(fn, inputs, flush)
            except GraphUnavailable as exc:
                self._capturable = False
                self.fallbacks.append(("candidate.not_capturable", f"the call cannot be captured into a CUDA "
                                       f"graph ({exc}); timed with events"))
                gpu.synchronize()
                t0 = time.perf_counter_ns()
        if result is None:
            total, outputs, pending = 0.0, [], []
            for args in inputs:
                ns, out, digests = self._timed_call(fn, args, flush)
                total += ns
                outputs.append(out)
                pending.append(digests)
            result = (total, tuple(outputs), pending)
        gpu.synchronize()
        host_ns = float(time.perf_counter_ns() - t0)
        return BlockTiming(result[0], result[1], host_ns=host_ns, mode=self.mode_used,
                           digests=_resolved(result[2]) if self.digests else None)

    def _digest_outputs(self, out: Any) -> list:
        """Enqueued on the timed stream: a digest per output (None where it has no bytes to digest)."""
        return [digest(x) if digestible(x) else None for x in as_outputs(out)] if self.digests else []

    def _timed_call(self, fn, args, flush, retried: bool = False) -> tuple[float, Any, list]:
        gpu = self._gpu
        held = self._held
        gpu.reset_persisting_l2()
        with gpu.on_stream():
            if flush is not None:
                flush()
            if held:
                gpu.hold()
            start = gpu.record()
            out = fn(*args)
            end = gpu.record()
            gpu.mark_window_end()
            digests = self._digest_outputs(out)   # after the window, before the stream runs on
            if held:
                gpu.release()
        gpu.synchronize()
        if held and gpu.hold_timed_out():
            if not retried:   # once: a first call may compile or load something while held
                return self._timed_call(fn, args, flush, retried=True)
            self._held = False
            self.fallbacks.append(("candidate.synchronizes",
                                   f"the stream was held {self._hold_timeout_s:g} s while the call was being "
                                   "enqueued: it synchronises with the device (or takes that long to launch), twice; "
                                   "timed without the hold, launch latency included"))
            return self._timed_call(fn, args, flush, retried=True)
        return gpu.elapsed_ns(start, end), out, digests

    def _graph_block(self, fn, inputs, flush) -> tuple[float, tuple, list]:
        gpu = self._gpu

        def calls():
            outs = []
            for args in inputs:
                if flush is not None:
                    flush()
                outs.append(fn(*args))
            return tuple(outs)

        def flushes():
            for _ in inputs:
                if flush is not None:
                    flush()

        with_calls, outputs = gpu.capture(calls)
        pending: list[list] = []
        t_calls = self._timed_replay(with_calls, lambda: pending.extend(self._digest_outputs(o) for o in outputs))
        # Without a flush there is nothing to subtract (and an empty graph cannot be replayed).
        t_flush = self._timed_replay(gpu.capture(flushes)[0]) if flush is not None else 0.0
        return max(t_calls - t_flush, 0.0), outputs, pending

    def _timed_replay(self, graph, after_end: Callable[[], None] | None = None) -> float:
        gpu = self._gpu
        gpu.reset_persisting_l2()
        with gpu.on_stream():
            gpu.hold()
            start = gpu.record()
            gpu.replay(graph)
            end = gpu.record()
            if after_end is not None:
                after_end()
            gpu.release()
        gpu.synchronize()
        return gpu.elapsed_ns(start, end)

    @contextmanager
    def marking_windows(self) -> Iterator[None]:
        """Mark the end of each timed window with a named kernel (for a profile to read).  No
        digests meanwhile: their kernels run after the window, where the profile looks for the
        call's hidden work (side_streams.outside_window)."""
        self._gpu.marking, digests, self.digests = True, self.digests, False
        try:
            yield
        finally:
            self._gpu.marking, self.digests = False, digests

    def clock_mhz(self) -> float | None:
        """The SM clock now, from the probe kernel (None where the device cannot say)."""
        return self._gpu.clock_mhz()

    def clock_s(self) -> float:
        return time.perf_counter()

    def resolution_ns(self) -> float:
        return EVENT_RESOLUTION_NS


def _resolved(pending: list[list]) -> tuple[tuple[tuple[int, int] | None, ...], ...]:
    """Per call, per output: the digest as two ints (one device-to-host copy for the block)."""
    import torch

    found = [d for call in pending for d in call if d is not None]
    # (An output on another device than the first, e.g. a CPU tensor from a CUDA task, is moved:
    # the gate names that mistake, this must not fail on it.)
    values = iter(torch.stack([d.to(found[0].device) for d in found]).tolist() if found else [])
    return tuple(tuple(None if d is None else tuple(int(v) for v in next(values)) for d in call) for call in pending)
