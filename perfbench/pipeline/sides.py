"""Which `Side` times each worker: the scorer-clocked arena protocol on the CPU, the event-timer
protocol on CUDA (docs/security.md says what each defends)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..correctness import Tolerance
from ..device.clock_probe import ClockProbeReadings
from ..isolation.arena import InputLayout
from ..isolation.client import WorkerClient
from ..task_runtime import TaskProgram
from ..tasks import TaskSpec
from ..timing.sampler import SamplerConfig
from .arena_side import ARENA_SLACK, ArenaSide, BlockInputs, map_arenas
from .worker_side import WorkerSide


@dataclass(frozen=True)
class SideSettings:
    timeout_s: float
    tolerance: Tolerance | None
    check_fraction: float
    check_budget: float = 0.0
    input_cores: tuple[int, ...] | None = None   # where the scorer may make inputs (None: anywhere)


AnySide = ArenaSide | WorkerSide


def build_sides(spec: TaskSpec, program: TaskProgram, device: str, sampler: SamplerConfig, settings: SideSettings,
                base_w: WorkerClient, cand: WorkerClient, probe_seed: int, sol: WorkerClient | None = None
                ) -> tuple[AnySide, Callable[[], AnySide], Callable[[], AnySide] | None]:
    """The baseline's side now (it is timed alone before the candidate loads), a maker for the
    candidate's (once it passed the gate) and, with `sol` (--s-ref live), one for the task's
    solution.  On the CPU every worker maps its arenas here, so call it before any loads task
    code.  The candidate is frozen while the solution is timed, as while the baseline is: a
    candidate that slowed the solution would lower its own s_ref."""
    t = settings.timeout_s
    if device.startswith("cuda"):
        # Only the baseline's (trusted) worker reports the clock it ran at: a candidate that could
        # report "throttled" would choose which of its pairs are discarded and measured again.
        base_side = WorkerSide(base_w, None, spec.timed_size, t, other=cand, probe=ClockProbeReadings())
        make_sol = None if sol is None else lambda: WorkerSide(sol, None, spec.timed_size, t, other=cand)
        return base_side, lambda: WorkerSide(cand, program, spec.timed_size, t, settings.tolerance,
                                             check_fraction=settings.check_fraction, other=base_w), make_sol
    probe = program.make_inputs(probe_seed, spec.timed_size)
    expected, n = program.reference(probe), sampler.max_iters_per_block
    room = ARENA_SLACK * InputLayout.of(probe).stride * n
    base_addr, cand_addr = (map_arenas(w, room, expected, n, t) for w in (base_w, cand))
    sol_addr = None if sol is None else map_arenas(sol, room, expected, n, t)
    inputs = BlockInputs(program, spec.timed_size, settings.input_cores)
    base_side = ArenaSide(base_w, None, inputs, expected, base_addr, t, other=cand)
    make_sol = None if sol is None else lambda: ArenaSide(sol, None, inputs, expected, sol_addr, t, other=cand,
                                                          overhead_from=base_side)
    return base_side, lambda: ArenaSide(cand, program, inputs, expected, cand_addr, t, settings.tolerance,
                                        settings.check_fraction, other=base_w, overhead_from=base_side,
                                        check_budget=settings.check_budget), make_sol
