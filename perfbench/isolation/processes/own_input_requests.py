"""A worker's requests on inputs it makes itself from a seed (CUDA; a contract block's on either
device): the gate's calls, a block's inputs prepared, the block timed, its outputs fetched."""
from __future__ import annotations

from typing import Any

from .worker_state import WorkerState, raised_by_candidate


class OwnInputRequests:
    """The protocol where this worker makes each block's inputs from a seed (CUDA; a contract
    block's on either device): CHECK, PREPARE, TIME, FETCH, SET_MODE, PROFILE."""

    def __init__(self, side: WorkerState) -> None:
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
            raise raised_by_candidate(exc) from None
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
            raise raised_by_candidate(exc) from None
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
