"""A `Side` that runs trusted code in this process (the `compare()` path, no workers)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..core.errors import CandidateRejected, UsageError
from ..core.score_key import iteration_seed
from ..task.output_signature import signature
from ..task.user_files import describe_exception
from .timers import Timer


class InProcessSide:
    """Calls `fn(*make_inputs(seed))` directly; checks its outputs keep one signature."""

    def __init__(self, label: str, fn: Callable[..., Any], make_inputs: Callable[[int], tuple],
                 timer: Timer, flush: Callable[[], None] | None = None,
                 source: Path | None = None):
        self.label = label
        self._fn = fn
        self._make_inputs = make_inputs
        self._timer = timer
        self._flush = flush
        self._source = source
        self.output_signature: Any = None

    def make_inputs(self, seed: int) -> tuple:
        try:
            args = self._make_inputs(seed)
        except Exception as exc:  # noqa: BLE001 - user code
            raise UsageError(f"{self.label}: input maker raised {describe_exception(exc)}") from None
        if isinstance(args, list):
            args = tuple(args)
        if not isinstance(args, tuple):
            raise UsageError(f"{self.label}: input maker must return a tuple of arguments, "
                             f"got {type(args).__name__}")
        return args

    def run_block(self, iters: int, seed: int) -> float:
        inputs = [self.make_inputs(iteration_seed(seed, k)) for k in range(iters)]
        try:
            block = self._timer.time_block(self._fn, inputs, self._flush)
        except Exception as exc:  # noqa: BLE001 - user code
            raise CandidateRejected("candidate.raised",
                                    f"{self.label} raised {describe_exception(exc, self._source)}") from None
        for out in block.outputs:
            sig = signature(out)
            if self.output_signature is None:
                self.output_signature = sig
            elif sig != self.output_signature:
                raise CandidateRejected(
                    "output.inconsistent",
                    f"{self.label} returned {sig} after returning {self.output_signature} "
                    "(outputs must keep one shape and dtype across calls)")
        return block.total_ns / iters
