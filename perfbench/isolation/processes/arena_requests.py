"""A worker's CPU requests: the scorer writes each block's inputs into a shared arena while the
worker is frozen, and reads the outputs the table describes from the worker's memory."""
from __future__ import annotations

from typing import Any

from .worker_state import WorkerState, raised_by_candidate


class ArenaRequests:
    """The CPU protocol: the scorer writes each block's inputs into a shared arena while this
    process is frozen, and reads the outputs the table describes from this process's memory
    (MAP, STAGE, RUN, GATE_CALL)."""

    def __init__(self, side: WorkerState, arena_fds: tuple[int, ...]) -> None:
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
            raise raised_by_candidate(exc) from None
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
