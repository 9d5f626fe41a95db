"""The worker process: loads one side (baseline or candidate) and answers requests.

A fresh interpreter (`python -m perfbench.isolation.worker FD`), never a fork of the scorer: it
inherits only its socket and a log file as stdout/stderr (so nothing the candidate prints can pass
for the scorer's verdict), and captures the integrity tripwires before any task code loads.
"""
from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Any


def _keep_freed_memory_in_heap() -> None:
    """Make glibc reuse freed blocks up to 32 MB (instead of fresh zeroed mmap pages), so that
    the poison written before a call is what an unwritten output contains.  Linux/glibc only."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 512 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def _close_other_fds(keep: int) -> None:
    # Popen already passes only fds 0-2 and the pipe; this also drops anything a site hook opened.
    for other in range(3, 1024):
        if other != keep:
            try:
                os.close(other)
            except OSError:
                pass


class _WorkerState:
    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.program = None
        self.fn = None
        self.integrity = None
        self.device = "cpu"
        self.timer = None
        self.flush = None
        self.last_block: tuple[list, tuple] = ([], ())
        self.pending: list[tuple] = []

    # -- requests --------------------------------------------------------------------------------
    def load(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ..errors import CandidateRejected
        from ..task_runtime import TaskProgram
        from ..tasks import TaskSpec
        from ..timing.flush import flusher_for
        from ..timing.timers import CpuTimer, CudaEventTimer
        from .integrity import Integrity

        self.device = req["device"]
        spec = TaskSpec.from_dict(req["task"])
        self.program = TaskProgram(spec, self.device, init_seed=req["init_seed"])
        self.timer = CudaEventTimer(self.device) if self.device.startswith("cuda") else CpuTimer()
        self.flush = flusher_for(self.device, req["cache_flush"])
        # Warm the framework before the snapshot so its own lazily started threads are not blamed.
        self.torch.ones(8, device=self.device).sum().item()
        self.integrity = Integrity()
        self.fn = self.program.load_callable(Path(req["file"]), untrusted=req["untrusted"])
        probe = self.program.make_inputs(req["probe_seed"], req["probe_size"])
        try:
            inspect.signature(self.fn).bind(*probe)
        except TypeError as exc:
            raise CandidateRejected("candidate.signature", f"{req['file']}: cannot be called with the task's "
                                    f"{len(probe)} inputs: {exc}") from None
        except ValueError:
            pass  # builtins without a signature: the call itself will tell
        self._check_integrity()
        return {"ok": True}, []

    def _call(self, inputs: tuple) -> Any:
        from ..errors import CandidateRejected
        from ..loading import describe_exception

        try:
            with self.torch.no_grad():
                out = self.fn(*inputs)
            self._sync()
        except Exception as exc:  # noqa: BLE001 - candidate code
            raise CandidateRejected("candidate.raised", f"raised {describe_exception(exc)}") from None
        return out

    def _sync(self) -> None:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize(self.device)

    def _check_integrity(self) -> None:
        from ..errors import CandidateRejected

        bad = self.integrity.violations()
        if bad:
            raise CandidateRejected(*bad[0])

    def _poison(self, nbytes: int, pattern: int) -> None:
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
        from ..task_runtime import as_outputs
        from .protocol import encode_values

        results, blobs = [], []
        held: tuple = ()
        for seed in req["seeds"]:
            for pattern in req["poisons"]:   # identical inputs, one call per poison pattern
                inputs = self._refill(held, self.program.make_inputs(seed, req["size"]))
                self._poison(req["poison_bytes"], pattern)
                out = self._call(inputs)
                self._check_integrity()
                out_meta, out_blobs = encode_values(as_outputs(out), inputs)
                in_meta, in_blobs = encode_values(list(inputs))
                results.append({"outputs": out_meta, "inputs": in_meta})
                blobs += out_blobs + in_blobs
                held = inputs
                del out
        return {"results": results}, blobs

    def prepare(self, req: dict[str, Any]) -> tuple[dict, list]:
        """Generate a block's fresh inputs; a separate request so the scorer's wall clock of
        'time' contains the calls and not the input generation."""
        from ..timing.inprocess import iteration_seed

        self.pending = [self.program.make_inputs(iteration_seed(req["seed"], k), req["size"])
                        for k in range(req["iters"])]
        self.last_block = ([], ())  # free the previous block's outputs now, not inside 'time'
        self._sync()
        return {"ok": True}, []

    def time(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ..errors import CandidateRejected
        from ..loading import describe_exception

        inputs, self.pending = self.pending, []
        try:
            with self.torch.no_grad():
                block = self.timer.time_block(self.fn, inputs, self.flush)
        except Exception as exc:  # noqa: BLE001 - candidate code
            raise CandidateRejected("candidate.raised", f"raised {describe_exception(exc)}") from None
        self._check_integrity()
        self.last_block = (list(block.outputs), tuple(inputs))
        return {"total_ns": float(block.total_ns)}, []

    def fetch(self, req: dict[str, Any]) -> tuple[dict, list]:
        from ..task_runtime import as_outputs
        from .protocol import encode_values

        outputs, inputs = self.last_block
        k = req["index"]
        out_meta, out_blobs = encode_values(as_outputs(outputs[k]), inputs[k])
        in_meta, in_blobs = encode_values(list(inputs[k]))
        return {"outputs": out_meta, "inputs": in_meta}, out_blobs + in_blobs


def main(fd: int) -> None:
    """Serve requests on socket `fd` until told to exit or the scorer goes away.

    Started by `WorkerClient` as ``python -m perfbench.isolation.worker FD`` with stdout/stderr
    already pointing at a log file and its own session (process group).
    """
    _close_other_fds(keep=fd)
    _keep_freed_memory_in_heap()
    import json
    from multiprocessing.connection import Connection

    from ..errors import CandidateRejected, PerfbenchError
    from .protocol import send

    conn = Connection(fd)
    state = _WorkerState()
    handlers = {"ping": lambda req: ({"ok": True}, []), "load": state.load, "check": state.check,
                "prepare": state.prepare, "time": state.time, "fetch": state.fetch}
    while True:
        try:
            req = json.loads(conn.recv_bytes())
        except EOFError:
            return
        op = req.get("op")
        if op == "exit":
            send(conn, {"id": req.get("id"), "ok": True})
            return
        try:
            reply, blobs = handlers[op](req)
        except CandidateRejected as exc:
            reply, blobs = {"error": exc.reason, "message": exc.message}, []
        except PerfbenchError as exc:
            reply, blobs = {"error": "usage", "message": str(exc)}, []
        except Exception as exc:  # noqa: BLE001 - whatever the loaded code provoked, answer
            from ..loading import describe_exception

            reply, blobs = {"error": "worker.error", "message": f"'{op}' failed: {describe_exception(exc)}"}, []
        send(conn, dict(reply, id=req.get("id")), blobs)


if __name__ == "__main__":
    main(int(sys.argv[1]))
