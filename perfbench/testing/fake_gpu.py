"""`FakeGpu`: a simulated stream for testing the CUDA timer's branches on the CPU.

One host clock and one device clock, in ns.  Every launch costs the host `launch_ns`; a kernel
runs once the stream is free and the host has launched it.  While the stream is held, work
queues and runs only on release, which is what hides launch latency from the events.  A host
synchronize while held waits out the hold's timeout (as on a GPU).  Side-stream work runs at
once, ignoring the hold.  Graph capture records launches instead of running them; a synchronize
while capturing fails the capture.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..timing.cuda.gpu import GraphUnavailable


@dataclass
class _Event:
    stamp_ns: float | None = None


@dataclass
class FakeGraph:
    kernels: list[float] = field(default_factory=list)


class FakeGpu:
    def __init__(self, *, launch_ns: float = 5_000.0, hold_timeout_s: float = 0.5,
                 clock_mhz: Callable[[int], float | None] | None = None):
        self.launch_ns = launch_ns
        self.hold_timeout_ns = hold_timeout_s * 1e9
        self.host_ns = 0.0
        self.device_ns = 0.0
        self.side_ns = 0.0            # when the last side-stream kernel finishes
        self.held = False
        self.timed_out = False
        self._queue: list[tuple[str, Any]] = []
        self._capturing: FakeGraph | None = None
        self._clock = clock_mhz or (lambda i: 1980.0)
        self.probes = 0
        self.l2_resets = 0
        self.window_ends = 0
        self.marking = False
        self._side_writes: list[Callable[[], None]] = []

    # -- what fake kernels call ------------------------------------------------------------------
    def launch(self, cost_ns: float) -> None:
        """A kernel of `cost_ns` on the current stream."""
        if self._capturing is not None:
            self._capturing.kernels.append(cost_ns)
            return
        self.host_ns += self.launch_ns
        self._enqueue("kernel", cost_ns)

    def launch_side(self, cost_ns: float, write: Callable[[], None] | None = None) -> None:
        """A kernel on a stream of the caller's own: not held, not between our events.  Its
        `write` (to an output) lands when the host next synchronises: after anything the timed
        stream enqueued meanwhile, as a kernel still running there would."""
        self.host_ns += self.launch_ns
        self.side_ns = max(self.side_ns, self.host_ns) + cost_ns
        if write is not None:
            self._side_writes.append(write)

    # -- the Gpu protocol ------------------------------------------------------------------------
    @contextmanager
    def on_stream(self) -> Iterator[None]:
        yield

    def synchronize(self) -> None:
        if self._capturing is not None:
            raise RuntimeError("operation not permitted when stream is capturing")
        if self.held:   # the device waits for the host, the host for the device: the hold gives up
            self.host_ns += self.hold_timeout_ns
            self.timed_out = True
            self._drain(self.host_ns)
        self.host_ns = max(self.host_ns, self.device_ns, self.side_ns)
        writes, self._side_writes = self._side_writes, []
        for write in writes:
            write()

    def reset_persisting_l2(self) -> None:
        self.l2_resets += 1

    def hold(self) -> None:
        self.held, self.timed_out = True, False

    def release(self) -> None:
        if self.held:
            self._drain(self.host_ns)

    def hold_timed_out(self) -> bool:
        return self.timed_out

    def record(self) -> _Event:
        ev = _Event()
        self._enqueue("event", ev)
        return ev

    def mark_window_end(self) -> None:
        if self.marking:
            self.window_ends += 1

    def elapsed_ns(self, start: _Event, end: _Event) -> float:
        return end.stamp_ns - start.stamp_ns

    def capture(self, work: Callable[[], Any]) -> tuple[FakeGraph, Any]:
        self._capturing = graph = FakeGraph()
        try:
            out = work()
        except RuntimeError as exc:
            raise GraphUnavailable(str(exc)) from None
        finally:
            self._capturing = None
        return graph, out

    def replay(self, graph: FakeGraph) -> None:
        self.host_ns += self.launch_ns
        for cost in graph.kernels:
            self._enqueue("kernel", cost)

    def clock_mhz(self) -> float | None:
        self.probes += 1
        return self._clock(self.probes - 1)

    # -- the simulated stream --------------------------------------------------------------------
    def _enqueue(self, kind: str, payload: Any) -> None:
        self._queue.append((kind, payload))
        if not self.held:
            self._drain(self.host_ns)

    def _drain(self, from_ns: float) -> None:
        t = max(self.device_ns, from_ns)
        for kind, payload in self._queue:
            if kind == "kernel":
                t += payload
            else:
                payload.stamp_ns = t
        self._queue.clear()
        self.device_ns = t
        self.held = False
