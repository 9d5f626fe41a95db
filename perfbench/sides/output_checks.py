"""The checks every side makes of a worker's calls, whichever device it times (cpu_side.ArenaSide,
cuda_side.WorkerSide) and the gate: a call's outputs and inputs against the trusted reference,
what that reference costs to compute, how much a reply may carry, which blocks get checked,
and whether a reported time is one the scorer's clock can contain."""
from __future__ import annotations

import math
import secrets

import torch

from ..core.errors import CandidateRejected
from ..task.correctness import Failure, OutputRecord, Tolerance, check_outputs, inputs_unchanged
from ..task.program import TaskProgram


def verify_call(program: TaskProgram, inputs: tuple, outs: list[OutputRecord], ins: list[OutputRecord],
                tol: Tolerance | None, expected: tuple[list, list | None] | None = None,
                atol_scale: float = 1.0, *, size: str) -> list[Failure]:
    """One call's outputs against the trusted reference and float64 oracle (`expected`, else
    recomputed here), then its inputs against the scorer's own copy.  Outputs first: an output
    that aliases an input has also changed it, and the alias is the more specific reason.
    `size`: the input size `inputs` were made at (a SOL-ExecBench workload has its own tolerance)."""
    own = program.judge(inputs, outs, ins, atol_scale, size=size)   # (a problem's own rules: GPU MODE, SOL-ExecBench)
    if own is not None:
        return own
    ref, oracle = expected if expected is not None else (program.reference(inputs), program.oracle(inputs))
    return check_outputs(outs, ref, oracle, tol, atol_scale) or inputs_unchanged(inputs, ins)


def expected_outputs(program: TaskProgram, inputs: tuple,
                     structure: list[torch.Tensor]) -> tuple[list[torch.Tensor], list | None] | None:
    """What `inputs` should give, for `verify_call`: (reference, float64 oracle).

    Where the oracle runs and every output is floating point (in `structure`, the reference's
    outputs on the probe inputs, and in the oracle), the reference itself is not run:
    `check_output` compares such values against the oracle and reads only the reference's
    shape, dtype and device, which stand-ins give (the structure's dtype and device in the
    oracle's shape; no memory).  That saves a float32 softmax of 4M elements (~13 ms) per timed
    check of row_softmax.  Otherwise (integer outputs, no float64 oracle) both are computed.
    None for a task that judges its outputs itself (GPU MODE): nothing to compute."""
    if program.judges_itself:
        return None
    oracle = program.oracle(inputs)
    if (oracle is not None and len(oracle) == len(structure)
            and all(_floating(s) and _floating(o) for s, o in zip(structure, oracle))):
        return [torch.zeros((), dtype=s.dtype, device=s.device).expand(o.shape)
                for s, o in zip(structure, oracle)], oracle
    return program.reference(inputs), oracle


def reply_budget(inputs: tuple, outputs: list | None) -> int:
    """The most a worker's encoded reply for one call (its outputs, then its inputs, as blobs)
    may hold: 4x what the call's inputs and expected outputs take, and 1 MiB (a wrong output of
    another shape or dtype is still answered, and rejected for its values).  Where the outputs
    are not known (a problem that judges itself), they are allowed 4x the inputs and 64 MiB."""
    def nbytes(values) -> int:
        values = [values] if isinstance(values, torch.Tensor) else values
        return sum(t.numel() * t.element_size() for t in values if isinstance(t, torch.Tensor))

    out = nbytes(outputs) if outputs is not None else 4 * nbytes(inputs) + (64 << 20)
    return 4 * (nbytes(inputs) + out) + (1 << 20)


def _floating(t: object) -> bool:
    return isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())


def should_check(checks_done: int, fraction: float) -> bool:
    """Whether to check an output of the block that just ran: the first two blocks always, then
    a random share, decided after the block so the candidate cannot know which are looked at."""
    return checks_done < 2 or secrets.randbelow(1_000_000) < fraction * 1_000_000


def reported_block_ns(label: str, header: dict, wall_ns: float) -> float:
    """The worker's own time for a block, refused if it is not a time or longer than the wall
    time the scorer saw around the request (`tamper.impossible_time`)."""
    total = header.get("total_ns")
    if not isinstance(total, (int, float)) or not math.isfinite(total) or total <= 0:
        raise CandidateRejected("tamper.impossible_time", f"{label} reported time {total!r}")
    if total > wall_ns:
        raise CandidateRejected("tamper.impossible_time", f"{label} reported {total / 1e6:.3f} ms for a block the "
                                f"scorer saw take {wall_ns / 1e6:.3f} ms")
    return float(total)
