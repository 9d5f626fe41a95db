"""Contract blocks: untimed blocks on the task's contract inputs, drawn among the timed blocks
(#58 (6)).

The gate's contract calls (pipeline/gate.contract_gate) all run before anything is timed, so a
candidate that counts its calls, or looks at which request it is serving, can be robust there
and fragile once timed: one that stayed right for row_softmax's first 22 calls, then subtracted
the generator's bound, was scored with the gate's contract alone (benchmarks/results/trust.md,
"#58 (6), contract blocks among the timed ones").

So at the end of a drawn share of the pairs (and of the warm-up's rounds) every side runs one
contract block: the same requests as a timed block (on the CPU: STAGE, RUN, the same number of
calls on the same arena), on fresh inputs under one of the contract's transforms that the gate
ran and passed.  The candidate's is checked at one iteration, drawn after the block; a wrong
value is `correctness.contract`.  No block's time is kept.  The baseline (and a live s_ref's
solution) run theirs unchecked, in a drawn order with the candidate's, so that no side does
between its pairs what another does not (#38: such a history moved a side's times).

When a block is drawn, which transform, its inputs and the iteration checked come from the
timing key (core/score_key), which no worker holds, so a block's position tells the candidate
nothing.  What is left to tell a contract block from a timed one is the values themselves, and
a kernel that reads its values to choose a path that handles them is what the contract asks for.

On CUDA the worker makes each block's inputs, so its PREPARE carries the transform: a candidate
that reads its own worker's requests can tell (docs/security.md, exploit 10).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

import numpy as np

from ..core.errors import CandidateRejected
from ..core.score_key import keyed_seed
from ..task.contract import ContractCall, contract_call, contract_failures, transformed
from ..task.correctness import Failure
from ..task.program import TaskProgram


@dataclass
class ContractBlocks:
    """One timed process's contract blocks: `due` at each pair's end says whether one runs."""

    program: TaskProgram
    transforms: tuple[str, ...]   # the contract's transforms the gate ran and passed
    seed: int                     # ScoreKey.contract_blocks_seed(process)
    share: float                  # the chance that a pair's end runs one (ScoreConfig.contract_block_share)
    run: int = 0                  # blocks drawn so far
    _rng: np.random.Generator = field(init=False, repr=False)
    _last: tuple[list, str, list[tuple]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.share) and 0 <= self.share <= 1):
            raise ValueError(f"the contract blocks' share must be in [0, 1], got {self.share!r}")
        self._rng = np.random.default_rng(keyed_seed(self.seed, "draws"))

    def due(self) -> tuple[str, int] | None:
        """At a pair's end: (the transform, the inputs' seed) of a contract block to run now, or None."""
        if not self.transforms or self._rng.random() >= self.share:
            return None
        transform = self.transforms[int(self._rng.integers(len(self.transforms)))]
        seed = keyed_seed(self.seed, "block", self.run)
        self.run += 1
        return transform, seed

    def order(self, n: int) -> list[int]:
        """The order in which n sides run a drawn block."""
        return [int(i) for i in self._rng.permutation(n)]

    def checked_iteration(self, iters: int) -> int:
        """The iteration checked, drawn once the block has run."""
        return int(self._rng.integers(iters))

    def transformed(self, block: list[tuple], transform: str) -> list[tuple]:
        """A block's generator inputs under `transform` (of the task's contract arguments); made
        once for every side that runs the block (the scorer only reads them)."""
        if self._last is None or self._last[0] is not block or self._last[1] != transform:
            self._last = (block, transform, [transformed(x, transform, self.program.spec.contract_args)
                                             for x in block])
        return self._last[2]

    def call(self, transform: str, size: str, x0: tuple) -> ContractCall:
        """The checked iteration's generator inputs `x0`, transformed, with what they should give
        (`skipped` where the reference is not finite there: then nothing is checked)."""
        return contract_call(self.program, transform, size, x0, self.program.reference(x0))


def rejection(transform: str, k: int, fails: list[Failure]) -> CandidateRejected:
    """A contract block's failure, as the verdict gives it."""
    first = contract_failures(transform, f"an untimed block among the timed ones, iteration {k}", fails)[0]
    return CandidateRejected(first.reason, first.message)


class ContractSide(Protocol):
    """What a side needs for contract blocks (cpu_side.ArenaSide, cuda_side.WorkerSide)."""

    blocks: list

    def end_pair(self) -> None: ...
    def contract_block(self, transform: str, iters: int, seed: int, plan: ContractBlocks) -> None: ...


def pair_end(candidate: ContractSide, sides: Sequence[ContractSide], plan: ContractBlocks | None) -> Callable[[], None]:
    """The sampler's work at each pair's end: the candidate's timed-output check, if drawn; then,
    at a drawn share of pair ends, one contract block of each of `sides` (the candidate among
    them), of the size of the pair's blocks, in a drawn order."""
    def end() -> None:
        candidate.end_pair()
        drawn = plan.due() if plan is not None and candidate.blocks else None
        if drawn is None:
            return
        transform, seed = drawn
        iters = candidate.blocks[-1].iters
        for i in plan.order(len(sides)):
            sides[i].contract_block(transform, iters, seed, plan)
    return end
