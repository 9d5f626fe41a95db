"""The worker process: loads one side (baseline or candidate) and answers requests.

A fresh interpreter (`python -m perfbench.isolation.processes.worker FD`) or a fork of a zygote that has
imported torch and nothing of the task (zygote.py), never a fork of the scorer: it inherits only
its socket, its arenas and a log file as stdout/stderr (so nothing the candidate prints can pass
for the scorer's verdict), and captures the integrity tripwires before any task code loads.
"""
from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable


def _raised(exc: Exception) -> Exception:
    """The rejection for an exception from candidate code.  A limit of its sandbox it ran into
    has a code of its own (#39: `resource.disk` for its private tmpfs or the file-size limit,
    `resource.memory`, `resource.pids` for threads it could not start), so a verdict says which
    limit, not only that the call raised."""
    import errno

    from ...core.errors import CandidateRejected
    from ...task.user_files import describe_exception

    if isinstance(exc, MemoryError):
        code = "resource.memory"
    elif isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        code = "resource.disk"
    elif isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        code = "resource.pids"
    else:
        code = "candidate.raised"
    return CandidateRejected(code, f"raised {describe_exception(exc)}")


class _WorkerState:
    """The side this worker loaded (its code, timer, tripwires) and what both kinds of requests
    share: the loaded callable's calls and the last block's outputs, kept until read."""

    def __init__(self) -> None:
        import torch

        threads = os.environ.get("OMP_NUM_THREADS")
        if threads and threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))   # the task's count, whatever torch chose
        self.torch = torch
        self.program = None
        self.fn = None
        self.integrity = None
        self.device = "cpu"
        self.timer = None
        self.flush = None
        self.last_block: tuple[list, tuple, tuple | None] = ([], (), None)

    def load(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ...core.errors import CandidateRejected
        from ...task.program import TaskProgram
        from ...task.spec import TaskSpec
        from ...timing.cuda.timer import CudaEventTimer
        from ...timing.flush import flusher_for
        from ...timing.timers import CpuTimer
        from .integrity import Integrity

        self.device = req["device"]
        spec = TaskSpec.from_dict(req["task"])
        self.program = TaskProgram(spec, self.device, init_seed=req["init_seed"])
        self.timer = (CudaEventTimer(self.device, mode=req.get("timing_mode", "events"))
                      if self.device.startswith("cuda") else CpuTimer())
        self.flush = flusher_for(self.device, req["cache_flush"])
        # Warm the framework before the snapshot so its own lazily started threads are not blamed.
        self.torch.ones(8, device=self.device).sum().item()
        self.integrity = Integrity()
        # Packages this side imports from a checkout rather than the installed copy (nothing of
        # them is imported yet: the zygote imports torch and perfbench only).
        sys.path[:0] = [str(p) for p in req.get("import_paths", ())]
        self.fn = self.program.load_callable(Path(req["file"]), untrusted=req["untrusted"])
        probe = self.program.make_inputs(req["probe_seed"], req["probe_size"])
        try:
            inspect.signature(self.fn).bind(*probe)
        except TypeError as exc:
            raise CandidateRejected("candidate.signature", f"{req['file']}: cannot be called with the task's "
                                    f"{len(probe)} inputs: {exc}") from None
        except ValueError:
            pass  # builtins without a signature: the call itself will tell
        self.check_integrity()
        return {"ok": True}, []

    def call(self, inputs: tuple) -> Any:
        try:
            with self.torch.no_grad():
                out = self.fn(*inputs)
            self.sync()
        except Exception as exc:  # noqa: BLE001 - candidate code
            raise _raised(exc) from None
        return out

    def sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize(self.device)

    def check_integrity(self) -> None:
        from ...core.errors import CandidateRejected

        bad = self.integrity.violations()
        if bad:
            raise CandidateRejected(*bad[0])

    def poison(self, nbytes: int, pattern: int) -> None:
        """Fill memory the allocator will hand out next with `pattern` bytes.

        Blocks of the expected output's size are filled and freed, so an output allocated but
        never written usually comes back holding the pattern.  Usually: the scorer does not rely
        on it, it calls twice with different patterns and compares (correctness.judge_repeated_call).
        """
        n = max(int(nbytes), 1)
        # Several blocks: the allocator hands back one of the most recently freed of a size.
        junk = [self.torch.full((n,), pattern, dtype=self.torch.uint8, device=self.device)
                for _ in range(32 if n < (1 << 16) else 2)]
        del junk

class _ArenaRequests:
    """The CPU protocol: the scorer writes each block's inputs into a shared arena while this
    process is frozen, and reads the outputs the table describes from this process's memory
    (MAP, STAGE, RUN, GATE_CALL)."""

    def __init__(self, side: _WorkerState, arena_fds: tuple[int, ...]) -> None:
        self.side, self.torch = side, side.torch
        self.arena_fds = arena_fds
        self.inputs_u8 = None          # the input arena, as uint8
        self.table = None              # the output table, as int64 records
        self.staged: tuple[str, list[tuple]] = ("", [])
        self.null_outputs: list = []    # one of each expected output: the null kernel's and the table's
        self.expected_meta: list[tuple] = []
        self._maps: tuple = ()          # keeps the mmaps alive as long as views of them exist

    def map(self, req: dict[str, Any]) -> tuple[dict, list]:
        """Map the two arenas (before any task code loads: the addresses reported are ours) and
        take the expected outputs' dtypes and shapes."""
        import mmap

        import numpy as np

        from ..wire.arena import RECORD_INTS

        in_fd, tab_fd = self.arena_fds
        in_map = mmap.mmap(in_fd, req["input_bytes"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        tab_map = mmap.mmap(tab_fd, req["table_bytes"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.inputs_u8 = self.torch.frombuffer(in_map, dtype=self.torch.uint8)
        self.null_outputs = [self.torch.zeros(o["shape"], dtype=getattr(self.torch, o["dtype"]))
                             for o in req["outputs"]]
        self.expected_meta = [(t.dtype, t.shape) for t in self.null_outputs]
        # The scorer rounds the table up to whole pages, which need not hold whole records.
        records = req["table_bytes"] // (8 * RECORD_INTS)
        self.table = np.frombuffer(tab_map, dtype=np.int64, count=records * RECORD_INTS).reshape(-1, RECORD_INTS)
        self._maps = (in_map, tab_map)
        self.staged = ("", [])   # views of an earlier mapping are stale
        return {"ok": True, "input_base": self.inputs_u8.data_ptr(), "input_bytes": req["input_bytes"]}, []

    def stage(self, req: dict[str, Any]) -> tuple[dict, list]:
        """Before every block: free the previous block's outputs (here, not inside the timed
        request), and build the views the calls take their arguments from when the layout
        changed (no values yet: the scorer writes them while this process is frozen)."""
        import json

        from ..wire.arena import staged_arguments

        # The tripwires for the previous block run here, outside the timed window (their /proc
        # scan costs milliseconds, and differently per namespace): the worker has been frozen
        # since its reply, so what they see is what was left at the reply.
        if self.side.integrity is not None:
            self.side.check_integrity()
        self.side.last_block = ([], (), None)
        if req["layout"] is None:
            return {"ok": True}, []
        key = json.dumps(req["layout"], sort_keys=True)
        if self.staged[0] != key:
            self.staged = (key, staged_arguments(self.inputs_u8, req["layout"]))
        return {"ok": True}, []

    def _null(self, *args: Any) -> Any:
        """The null kernel: allocates outputs of the expected shape (as a kernel must) and
        computes nothing, so a null block costs what a block costs besides the kernel."""
        outs = tuple(self.torch.empty_like(t) for t in self.null_outputs)
        return outs[0] if len(outs) == 1 else outs

    def run(self, req: dict[str, Any]) -> tuple[dict, list]:
        """The timed request: the calls on the staged views, then each output's address, dtype,
        shape and strides into the table.  The scorer's clock runs around all of it."""
        side = self.side
        views = self.staged[1][:req["iters"]]
        fn = self._null if req.get("null") else side.fn
        try:
            with self.torch.no_grad():
                block = side.timer.time_block(fn, views, side.flush)
        except Exception as exc:  # noqa: BLE001 - candidate code
            raise _raised(exc) from None
        self._describe_outputs(block.outputs)
        side.last_block = (list(block.outputs), (), None)   # alive until the scorer has read them
        return {"total_ns": float(block.total_ns)}, []

    def _describe_outputs(self, outputs: Any) -> None:
        """Each output into the table (arena.describe_outputs), inside the timed window."""
        from ..wire.arena import describe_outputs

        describe_outputs(self.table, outputs, self.expected_meta)

    def gate_call(self, req: dict[str, Any]) -> tuple[dict, list]:
        """One gate call (CPU): on the staged views of the input arena, which the scorer filled
        while this process was frozen, after the memory the allocator hands out next was
        poisoned; its outputs described in the table (row 0) like a timed call's, for the
        scorer to read from this process's memory once it is frozen again.  Nothing this
        process encodes decides the gate (#39)."""
        side = self.side
        side.last_block = ([], (), None)
        side.poison(req["poison_bytes"], req["pattern"])
        out = side.call(self.staged[1][0])
        side.check_integrity()
        self._describe_outputs([out])
        side.last_block = ([out], (), None)   # alive until the scorer has read it
        return {"ok": True}, []


class _OwnInputRequests:
    """The protocol where this worker makes each block's inputs from a seed (CUDA; a contract
    block's on either device): CHECK, PREPARE, TIME, FETCH, SET_MODE, PROFILE."""

    def __init__(self, side: _WorkerState) -> None:
        self.side, self.torch = side, side.torch
        self.gate_inputs: tuple = ()   # the last gate call's input tensors, refilled by the next
        self.pending: list[tuple] = []

    def _refill(self, held: tuple, fresh: tuple) -> tuple:
        """Copy the new values into the previous call's input tensors, in place.

        Same objects, same addresses, new contents: a cache keyed on identity or data pointer
        returns a stale answer here, deterministically.
        """
        torch = self.torch
        if len(held) != len(fresh) or not all(
                type(h) is torch.Tensor and type(f) is torch.Tensor and h.shape == f.shape
                and h.dtype == f.dtype and h.device == f.device and h.is_contiguous() == f.is_contiguous()
                for h, f in zip(held, fresh)):
            return fresh
        for h, f in zip(held, fresh):
            h.copy_(f)
        return held

    def check(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ...task.contract import transformed
        from ...task.program import as_outputs
        from ..wire.protocol import encode_values

        results, blobs = [], []
        for seed in req["seeds"]:
            for pattern in req["poisons"]:   # identical inputs, one call per poison pattern
                # Refilled in place across calls and across requests (the scorer sends one call
                # per request, so that its timeout is one call's).
                made = self.side.program.make_inputs(seed, req["size"])
                if req.get("transform"):   # the task's input contract (pipeline/gate.contract_gate)
                    made = transformed(made, req["transform"], self.side.program.spec.contract_args)
                inputs = self._refill(self.gate_inputs, made)
                self.side.poison(req["poison_bytes"], pattern)
                out = self.side.call(inputs)
                self.side.check_integrity()
                out_meta, out_blobs = encode_values(as_outputs(out), inputs)
                in_meta, in_blobs = encode_values(list(inputs))
                results.append({"outputs": out_meta, "inputs": in_meta})
                blobs += out_blobs + in_blobs
                self.gate_inputs = inputs
                del out
        return {"results": results}, blobs

    def prepare(self, req: dict[str, Any]) -> tuple[dict, list]:
        """Generate a block's fresh inputs; a separate request so the scorer's wall clock of
        'time' contains the calls and not the input generation."""
        from ...core.score_key import iteration_seed
        from ...task.contract import transformed

        self.pending = [self.side.program.make_inputs(iteration_seed(req["seed"], k), req["size"])
                        for k in range(req["iters"])]
        if req.get("transform"):   # a contract block (sides/contract_blocks.py)
            self.pending = [transformed(x, req["transform"], self.side.program.spec.contract_args) for x in self.pending]
        self.side.last_block = ([], (), None)  # free the previous block's outputs now, not inside 'time'
        self.side.sync()
        return {"ok": True}, []

    def time(self, req: dict[str, Any]) -> tuple[dict, list]:
        inputs, self.pending = self.pending, []
        try:
            with self.torch.no_grad():
                block = self.side.timer.time_block(self.side.fn, inputs, self.side.flush)
        except Exception as exc:  # noqa: BLE001 - candidate code
            raise _raised(exc) from None
        self.side.check_integrity()
        self.side.last_block = (list(block.outputs), tuple(inputs), block.digests)
        reply = {"total_ns": float(block.total_ns)}
        if self.side.device.startswith("cuda"):
            # The host's clock of the block (synchronize-bounded) beside the events, how it was
            # timed, and the SM clock right after it (throttle check without NVML permissions; the
            # scorer reads the baseline's only, both sides pay for the probe alike).
            reply.update(host_ns=block.host_ns, mode=block.mode, fallback=self.side.timer.fallback,
                         fallback_message=self.side.timer.fallback_message, clock_mhz=self.side.timer.clock_mhz())
        return reply, []

    def set_mode(self, req: dict[str, Any]) -> tuple[dict, list]:
        """The run's timing mode, once the scorer has chosen it (task mode "auto")."""
        self.side.timer.mode = req["mode"]
        return {"ok": True}, []

    def profile(self, req: dict[str, Any]) -> tuple[dict, list]:
        """One timed call under the profiler: the device work it did outside the timed window."""
        from ...timing.cuda.side_streams import outside_window, profile_timed_call

        inputs = self.side.program.make_inputs(req["seed"], req["size"])
        try:
            with self.torch.no_grad():
                acts = profile_timed_call(self.side.timer, self.side.fn, inputs, self.side.flush)
        except Exception as exc:  # noqa: BLE001 - the candidate's or the profiler's
            raise _raised(exc) from None
        self.side.check_integrity()
        return {"findings": outside_window(acts), "activities": len(acts)}, []

    def fetch(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ...task.program import as_outputs
        from ..wire.protocol import encode_values

        outputs, inputs, digests = self.side.last_block
        k = req["index"]
        out_meta, out_blobs = encode_values(as_outputs(outputs[k]), inputs[k])
        in_meta, in_blobs = encode_values(list(inputs[k]))
        # What the timed stream saw of each output at the end event (CUDA; timing/cuda/checksum.py).
        reply = {"outputs": out_meta, "inputs": in_meta, "digests": list(digests[k]) if digests else None}
        return reply, out_blobs + in_blobs


def main(fd: int, arena_fds: tuple[int, ...] = ()) -> None:
    """Serve requests on socket `fd` until told to exit or the scorer goes away.

    Started by `WorkerClient` as ``python -m perfbench.isolation.processes.worker FD`` with stdout/stderr
    already pointing at a log file and its own session (process group).
    """
    from ..sandbox.hardening import harden_process

    harden_process({fd, *arena_fds})
    serve(fd, arena_fds)


def handlers(side: _WorkerState, probe: Callable[[], dict], arena_fds: tuple[int, ...] = ()) -> dict:
    """What answers each request (`Op`) but EXIT, which `serve` answers itself: the loaded side's
    LOAD, the arena's requests (CPU) and the requests on inputs this worker makes (CUDA), as the
    Op enum groups them."""
    from ..wire.protocol import Op

    arena, own = _ArenaRequests(side, arena_fds), _OwnInputRequests(side)
    return {Op.PING: lambda req: ({"ok": True}, []), Op.PROBE: lambda req: ({"ok": True, "probe": probe()}, []),
            Op.LOAD: side.load,
            Op.MAP: arena.map, Op.STAGE: arena.stage, Op.RUN: arena.run, Op.GATE_CALL: arena.gate_call,
            Op.CHECK: own.check, Op.PREPARE: own.prepare, Op.TIME: own.time, Op.FETCH: own.fetch,
            Op.SET_MODE: own.set_mode, Op.PROFILE: own.profile}


def serve(fd: int, arena_fds: tuple[int, ...]) -> None:
    """The request loop of a worker: a fresh interpreter's (`main`), or a forked one's (zygote.py)."""
    import json
    from multiprocessing.connection import Connection

    from ...core.errors import CandidateRejected, PerfbenchError
    from ..sandbox.hardening import adopt_orphans
    from ..wire.protocol import Op, send

    adopt_orphans()
    conn = Connection(fd)
    side = _WorkerState()   # imports torch: unpinned, so the two workers import side by side
    from .cpu_threads import pin_from_env

    pin_from_env()   # before any task code runs, and before torch's thread pool starts (lazily)
    from ..sandbox.plan import probe

    answer = handlers(side, probe, arena_fds)
    while True:
        try:
            req = json.loads(conn.recv_bytes())
        except EOFError:
            return
        op = req.get("op")
        if op == Op.EXIT:
            send(conn, {"id": req.get("id"), "ok": True})
            return
        try:
            reply, blobs = answer[op](req)
        except CandidateRejected as exc:
            reply, blobs = {"error": exc.reason, "message": exc.message}, []
        except PerfbenchError as exc:
            reply, blobs = {"error": "usage", "message": str(exc)}, []
        except Exception as exc:  # noqa: BLE001 - whatever the loaded code provoked, answer
            from ...task.user_files import describe_exception

            reply, blobs = {"error": "worker.error", "message": f"'{op}' failed: {describe_exception(exc)}"}, []
        send(conn, dict(reply, id=req.get("id")), blobs)


if __name__ == "__main__":
    main(int(sys.argv[1]), tuple(int(x) for x in sys.argv[2:]))
