"""The CUDA `Side` of the trust boundary (the CPU one is cpu_side.ArenaSide; the checks both make
are output_checks.py).

The worker makes a block's inputs in `prepare`, times the calls with CUDA events, and serialises
the output the scorer asks for afterwards.  Per block the scorer (1) wall-clocks the request and
freezes the other worker meanwhile, (2) refuses reported times the wall clock cannot contain,
and (3) for the candidate, picks one iteration *after* the block (in the first blocks and a
random share of the rest) and checks its output against the reference on inputs it regenerates
itself, and (4) against the digest the timed stream took of it at the end event (a later write:
tamper.side_stream; timing/cuda/checksum.py).  The event times still come from the candidate's
process: docs/security.md says what that leaves open and the plan for it.
"""
from __future__ import annotations

import math
import secrets
import time
from dataclasses import dataclass, field

from ..core.errors import CandidateRejected
from ..core.tamper import BlockWall
from ..device.clock_probe import ClockProbeReadings, ProbedMonitor
from ..isolation.processes.worker_client import WorkerClient
from ..isolation.wire.protocol import Op, ProtocolError, decode_values
from ..task.correctness import OutputRecord, Tolerance
from ..task.program import TaskProgram
from ..timing.cuda.checksum import digest_pair
from ..timing.cuda.modes import choose_mode
from ..core.score_key import iteration_seed
from .contract_blocks import ContractBlocks, rejection
from .output_checks import reply_budget, reported_block_ns, should_check, verify_call


def check_end_digests(label: str, k: int, digests: object, outs: list[OutputRecord]) -> None:
    """The outputs fetched after the block against the digests the timed stream took of them
    right after the call's end event.  Bytes that changed in between were written by work the
    call left running (another stream, or queued behind the end event): its time is not in the
    events, so the call is refused as `tamper.side_stream`.  Checked before the values: a late
    write explains a wrong value more specifically than the mismatch does."""
    if not isinstance(digests, list) or len(digests) != len(outs):
        raise CandidateRejected("tamper.protocol", f"{label}: timed iteration {k}: no end-of-window digest "
                                f"for each of its {len(outs)} outputs")
    for i, (seen, rec) in enumerate(zip(digests, outs)):
        if rec.tensor is None:
            continue
        if not (isinstance(seen, list) and len(seen) == 2 and all(type(v) is int for v in seen)):
            raise CandidateRejected("tamper.protocol", f"{label}: timed iteration {k}: output {i}'s "
                                    f"end-of-window digest is {seen!r}")
        if tuple(seen) != digest_pair(rec.tensor):
            raise CandidateRejected("tamper.side_stream", f"timed iteration {k}: output {i} changed after its timed "
                                    "window closed (its bytes at the end event differ from the bytes fetched): work "
                                    "writing it was still running on another stream or queued after the end event")


def _host_block_ns(label: str, header: dict, events_ns: float, wall_ns: float) -> float | None:
    """The worker's host clock of a CUDA block: it holds the events, and the scorer's request holds it."""
    host = header.get("host_ns")
    if host is None:
        return None
    if not isinstance(host, (int, float)) or not math.isfinite(host) or not events_ns <= host <= wall_ns:
        raise CandidateRejected("tamper.impossible_time", f"{label} reported a host time of {host!r} ns for a block "
                                f"of {events_ns:.0f} ns on its events and {wall_ns:.0f} ns on the scorer's clock")
    return float(host)


@dataclass
class WorkerSide:
    client: WorkerClient
    program: TaskProgram | None          # set for the candidate: its timed outputs get checked
    size: str
    timeout_s: float
    tolerance: Tolerance | None = None
    check_fraction: float = 1.0
    other: WorkerClient | None = None  # frozen while this side is timed; its CPU use is watched
    probe: ClockProbeReadings | None = None  # CUDA, baseline only: the SM clock its worker read after each block
    blocks: list[BlockWall] = field(default_factory=list)
    checks: int = 0
    contract_blocks: int = 0                 # untimed contract blocks run (contract_blocks.py)
    mode: str | None = None                  # CUDA: how the last block was timed (timing/cuda/timer.py)
    fallback: tuple[str, str] | None = None  # CUDA: (reason code, message) once the timer fell back
    _pending: tuple[int, int] | None = None  # (iters, seed) of a block whose output is to be checked

    # The worker's CUDA events timed each block: the host time around them is compared with the
    # baseline's to catch work hidden outside the events (pipeline/process_checks.py).
    scorer_clocked = False

    timer = "cuda_events"

    def gate_side(self) -> None:
        """None: the worker encodes each gate call's outputs itself (pipeline/gate.py)."""
        return None

    def gate_checks(self, sizes: tuple[str, ...], seed: int) -> tuple[str, ...]:
        """One profiled timed call per size: device work outside the timed window is
        `tamper.side_stream`.  Returns warnings where the profile could not tell."""
        warnings = []
        for size in sizes:
            header, _ = self.client.request(Op.PROFILE, self.timeout_s * 4, seed=seed, size=size)
            findings = header.get("findings")
            if findings is None:
                warnings.append(f"side-stream check could not run for size {size!r}: the profile held no timing "
                                f"window ({header.get('activities')} device activities)")
            elif findings:
                raise CandidateRejected("tamper.side_stream", f"size {size!r}: {findings[0]}"
                                        + (f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""))
        return tuple(warnings)

    def choose_timing_mode(self, task_mode: str, per_call_ns: float | None) -> str:
        """The task's timing mode ("auto" decides from the baseline's time per call alone), set
        in this side's worker where it is not the default "events"."""
        mode = choose_mode(task_mode, per_call_ns)
        if mode != "events":
            self.client.request(Op.SET_MODE, self.timeout_s, mode=mode)
        return mode

    def monitor(self, dev):
        """What watches the device per block: NVML's conditions and, on the baseline's side, the
        SM clock its worker probed after each block."""
        if self.probe is None:
            return dev.monitor
        locked = dev.control.target_sm_mhz if dev.control.locked else None
        return ProbedMonitor(dev.monitor, self.probe, locked)

    def fallback_warnings(self) -> tuple[str, ...]:
        """A warning once this side's timer fell back (e.g. candidate.synchronizes)."""
        return (f"{self.client.label}: {self.fallback[1]}",) if self.fallback else ()

    def pair_diagnostics(self, candidate: "WorkerSide", iters: int) -> dict:
        """What the verdict keeps of how this (baseline) side's pairs were timed: each side's mode."""
        return {"timing_mode": {"baseline": self.mode, "candidate": candidate.mode}}

    def finish(self) -> None:
        """The last block's check, if due (the tripwires ran inside each block)."""
        self._check_pending()

    def end_pair(self) -> None:
        """The timed-output check of this side's block of the pair that just ended, if drawn:
        at the pair's end it precedes the next pair's first block, whose side the seed draws
        (cpu_side.py says why not at once)."""
        self._check_pending()

    def _check_pending(self) -> None:
        if self._pending is not None:
            iters, seed = self._pending
            self._pending = None
            self._check_timed_output(iters, seed)

    def _request_block(self, iters: int, seed: int, transform: str | None = None) -> tuple[dict, int, float | None]:
        """PREPARE and TIME one block, the other worker frozen around TIME: (the reply, the
        scorer's wall ns of TIME, the CPU seconds the other side used meanwhile)."""
        self.client.request(Op.PREPARE, self.timeout_s, iters=iters, seed=seed, size=self.size,
                            **({"transform": transform} if transform else {}))
        cpu0 = cpu1 = None
        if self.other is not None:
            # Nothing of the other side runs while this side is timed (with a cgroup); its CPU
            # use meanwhile is still measured, as a cross-check (and the only check without one).
            self.other.freeze()
            cpu0 = self.other.cpu_seconds()
        try:
            t0 = time.perf_counter_ns()
            header, _ = self.client.request(Op.TIME, self.timeout_s)
            wall = time.perf_counter_ns() - t0
        finally:
            if self.other is not None:
                cpu1 = self.other.cpu_seconds()
                self.other.thaw()
        return header, wall, None if cpu1 is None or cpu0 is None else cpu1 - cpu0

    def run_block(self, iters: int, seed: int) -> float:
        self._check_pending()   # (a check still due runs before this worker's outputs are replaced)
        header, wall, other_cpu = self._request_block(iters, seed)
        total = reported_block_ns(self.client.label, header, wall)
        host = _host_block_ns(self.client.label, header, total, wall)
        self._note_cuda_timing(header)
        self.blocks.append(BlockWall(float(wall), total, iters, other_cpu, host_ns=host))
        if self.program is not None and should_check(self.checks, self.check_fraction):
            self._pending = (iters, seed)
        return total / iters

    def contract_block(self, transform: str, iters: int, seed: int, plan: ContractBlocks) -> None:
        """One untimed block of `iters` calls on the inputs of `seed` under `transform` (the
        worker makes them, as a timed block's); the candidate's checked at one iteration
        (contract_blocks.py)."""
        header, wall, _ = self._request_block(iters, seed, transform)
        reported_block_ns(self.client.label, header, wall)
        self.contract_blocks += 1
        if self.program is None:
            return
        k = plan.checked_iteration(iters)
        call = plan.call(transform, self.size, self.program.make_inputs(iteration_seed(seed, k), self.size))
        if call.skipped is not None:
            return
        outs, ins, digests = self._fetch(k, call.inputs, call.expected[0])
        check_end_digests(self.client.label, k, digests, outs)
        fails = verify_call(self.program, call.inputs, outs, ins, self.tolerance, expected=call.expected,
                            atol_scale=call.atol_scale, size=self.size)
        if fails:
            raise rejection(transform, k, fails)

    def _fetch(self, k: int, inputs: tuple, expected: list | None) -> tuple[list, list, object]:
        """Iteration k's outputs and inputs as the worker encodes them, and its end digests."""
        header, blobs = self.client.request(Op.FETCH, self.timeout_s, index=k,
                                            reply_bytes=reply_budget(inputs, expected))
        try:
            n_out = len(header["outputs"])
            return (decode_values(header["outputs"], blobs[:n_out]), decode_values(header["inputs"], blobs[n_out:]),
                    header.get("digests"))
        except (KeyError, TypeError, ProtocolError) as exc:
            raise CandidateRejected("tamper.protocol", f"{self.client.label}: bad fetch reply: {exc}") from None

    def _note_cuda_timing(self, header: dict) -> None:
        mode = header.get("mode")
        if mode is None:
            return
        self.mode = str(mode)
        if header.get("fallback") and self.fallback is None:
            self.fallback = (str(header["fallback"]), str(header.get("fallback_message") or ""))
        if self.probe is not None:
            mhz = header.get("clock_mhz")
            self.probe.record(float(mhz) if isinstance(mhz, (int, float)) and math.isfinite(mhz) else None)

    def _check_timed_output(self, iters: int, seed: int) -> None:
        k = secrets.randbelow(iters)  # chosen after the block ran
        inputs = self.program.make_inputs(iteration_seed(seed, k), self.size)
        expected = None if self.program.judges_itself else (self.program.reference(inputs),
                                                             self.program.oracle(inputs))
        outs, ins, digests = self._fetch(k, inputs, expected[0] if expected else None)
        check_end_digests(self.client.label, k, digests, outs)
        fails = verify_call(self.program, inputs, outs, ins, self.tolerance, expected=expected, size=self.size)
        self.checks += 1
        if fails:
            raise CandidateRejected(fails[0].reason, f"timed iteration {k}: {fails[0].message}")
