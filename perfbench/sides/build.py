"""Which `Side` times each worker: the scorer-clocked arena protocol on the CPU, the event-timer
protocol on CUDA (docs/security.md says what each defends)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from ..core.tamper import BlockWall
from ..device.clock_probe import ClockProbeReadings
from ..isolation.processes.worker_client import WorkerClient
from ..isolation.wire.arena import InputLayout
from ..task.correctness import Tolerance
from ..task.program import TaskProgram
from ..task.spec import TaskSpec
from ..timing import sampler as sampling   # (build_sides has a parameter named sampler)
from ..timing.sampler import SamplerConfig
from .cpu_side import ARENA_SLACK, ArenaSide, BlockInputs, map_arenas
from .contract_blocks import ContractBlocks
from .cuda_side import WorkerSide

if TYPE_CHECKING:
    from ..device.device_session import DeviceSession
    from ..timing.sampler import BlockMonitor


@dataclass(frozen=True)
class SideSettings:
    timeout_s: float
    tolerance: Tolerance | None
    check_fraction: float
    check_budget: float = 0.0
    input_cores: tuple[int, ...] | None = None   # where the scorer may make inputs (None: anywhere)


class Side(sampling.Side, Protocol):
    """One worker's timed blocks, as the pipeline uses them whichever kind it has (`ArenaSide`
    on the CPU, `WorkerSide` on CUDA): no caller asks which.  The sampler needs only its
    `run_block` (timing/sampler.Side, which in-process and served sides implement too)."""

    client: WorkerClient
    blocks: list[BlockWall]
    checks: int
    contract_blocks: int   # untimed contract blocks run (sides/contract_blocks.py)
    scorer_clocked: bool   # the scorer's clock timed each block (no unaccounted time to look for)
    timer: str             # what timed the blocks, as the verdict names it

    def run_block(self, iters: int, seed: int) -> float: ...
    def end_pair(self) -> None: ...
    def contract_block(self, transform: str, iters: int, seed: int, plan: ContractBlocks) -> None: ...
    def finish(self) -> None: ...
    def gate_side(self) -> ArenaSide | None: ...
    def gate_checks(self, sizes: tuple[str, ...], seed: int) -> tuple[str, ...]: ...
    def choose_timing_mode(self, task_mode: str, per_call_ns: float | None) -> str | None: ...
    def monitor(self, dev: DeviceSession) -> BlockMonitor: ...
    def fallback_warnings(self) -> tuple[str, ...]: ...
    def pair_diagnostics(self, candidate: Side, iters: int) -> dict: ...


def build_sides(spec: TaskSpec, program: TaskProgram, device: str, sampler: SamplerConfig, settings: SideSettings,
                base_w: WorkerClient, cand: WorkerClient, probe_seed: int, sol: WorkerClient | None = None
                ) -> tuple[Side, Callable[[], Side], Callable[[], Side] | None]:
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
