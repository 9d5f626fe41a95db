"""One variant of a sparse case in its own process (`python -m perfbench.sparse.worker FD`):
prepare (compile), gate against dense float64 PyTorch, then time blocks on request
(timing/served_side.py).  Two Scorch checkouts each get such a process, with the checkout first on
the import path and its own extensions cache, so their modules and kernels never mix."""
from __future__ import annotations

import sys

import torch

from ..timing.inprocess import InProcessSide
from ..timing.served_side import serve
from ..timing.timers import CpuTimer
from .cases import CompileError, SparseCase, operands, reference
from .variants import COMPILE_ERROR, INCORRECT, NOT_APPLICABLE, OK, NotApplicable, gate, prepare


def start(msg: dict) -> tuple[InProcessSide | None, dict]:
    from ..adapters.scorch import version_of
    case = SparseCase(**{**msg["case"], "shape": tuple(msg["case"]["shape"])})
    torch.set_num_threads(int(msg["threads"]))
    variant = str(msg["variant"])
    ops = operands(case)
    info = {"scorch": version_of() if variant == "scorch" else None}
    try:
        p = prepare(variant, case, ops)
    except NotApplicable as exc:
        return None, {**info, "status": NOT_APPLICABLE, "detail": str(exc)}
    except CompileError as exc:
        return None, {**info, "status": COMPILE_ERROR, "detail": str(exc)}
    wrong = gate(p, case, reference(case, ops))
    if wrong:
        return None, {**info, "status": INCORRECT, "detail": f"{case.label}: {wrong}", "compile_s": p.compile_s}
    side = InProcessSide(variant, p.fn, lambda _seed: (), CpuTimer())
    return side, {**info, "status": OK, "compile_s": p.compile_s}


def main(argv: list[str]) -> None:
    serve(int(argv[0]), {"worker": "perfbench.sparse"}, start)


if __name__ == "__main__":
    main(sys.argv[1:])
