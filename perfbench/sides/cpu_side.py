"""The CPU `Side` of the trust boundary: the scorer's clock, inputs handed over frozen, outputs
read from the frozen worker.  (cuda_side.WorkerSide is the CUDA one, docs/security.md.)

One block, side S, the other side O:

1. O and S are frozen (cgroup).  The scorer writes the block's inputs (which it generated from
   secret seeds) into S's input arena.  Nothing of S can see them yet.
2. t0; S is thawed and sent `run`; S calls the kernel on the staged views and writes each
   output's address, dtype, shape and strides into its output table; S replies; S is frozen;
   t1.  The scorer's t1 - t0, less the baseline's per-block overhead (`overhead_ns`), is the
   block's time.  The candidate's own timer is only a diagnostic.
3. For the candidate, one iteration k is checked at the end of the pair (`end_pair`): its
   output bytes are read from S's memory at the addresses in the table (S stays frozen until
   its next block: what was there at the reply is what is read), its inputs from the arena,
   both against the scorer's own reference.  Deferred to the pair's end, the check precedes the
   next pair's first block, whose side is drawn from the seed; done at once, it preceded the
   baseline's block in every candidate-first pair (timing/schedule.py).
4. At a drawn share of pair ends, every side also runs an untimed contract block, made and run
   as a timed block is, on inputs under the task's contract; the candidate's is checked at one
   iteration (sides/contract_blocks.py).
"""
from __future__ import annotations

import math
import secrets
import statistics
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..core.errors import CandidateRejected
from ..core.tamper import BlockWall
from ..isolation.processes.worker_client import WorkerClient
from ..isolation.wire.arena import DEVICES, DTYPES, KIND_DEVICE, KIND_EXPECTED, KIND_OTHER, KIND_STRUCTURE, KIND_TENSOR, IN_PAGE_SPAN, MAX_DIMS, BlockLayout, MemoryReadTimeout, in_page_start, read_process_memory, table_bytes, table_records
from ..isolation.wire.protocol import Op
from ..task.correctness import OutputRecord, Tolerance, record_of
from ..task.program import TaskProgram
from ..core.score_key import iteration_seed
from .contract_blocks import ContractBlocks, rejection
from .output_checks import expected_outputs, reported_block_ns, should_check, verify_call

NULL_BLOCKS = 5   # null blocks per block size: the median is the overhead subtracted


def per_iteration_ns(wall_ns: float, overhead_ns: float, iters: int) -> float:
    """A block's time per call: the scorer's wall time less the measured per-block overhead.

    A floor of 1% of the wall keeps it positive when a kernel is lost in the overhead's noise."""
    return max(wall_ns - overhead_ns, 0.01 * wall_ns) / iters


class BlockInputs:
    """The scorer's inputs for one block, made once and shared by both sides of a pair, on
    threads pinned to `cores` (none of the workers': made on a worker's core, they left that
    core's cache dirty for the block that follows; on row_softmax, speedups read 1.3% lower
    over 40 alternating CLI scores, 2.2 standard errors).  With fewer than 2 such cores, made
    serially, as before."""

    def __init__(self, program: TaskProgram, size: str, cores: tuple[int, ...] | None = None):
        self.program = program
        self.size = size
        self.cores = cores
        self._last: tuple[tuple[int, int], list[tuple]] | None = None

    def get(self, seed: int, iters: int) -> list[tuple]:
        if self._last is None or self._last[0] != (seed, iters):
            seeds = [iteration_seed(seed, k) for k in range(iters)]
            self._last = ((seed, iters), self.program.make_inputs_many(seeds, self.size, self.cores))
        return self._last[1]


# The input arena is sized for this many times the probe's inputs per call, for the largest
# block: room for inputs whose size varies by seed.  Sparse: unwritten pages cost nothing.
ARENA_SLACK = 2


def map_arenas(client: WorkerClient, input_bytes: int, expected: list[torch.Tensor], max_iters: int,
               timeout_s: float) -> int:
    """Size a worker's arenas and have it map them (first before any code loads; again if a
    block needs more room); tell it the outputs to expect.  Returns the worker's address of its
    input arena (for the aliasing check: after a re-map it comes from a worker that runs
    candidate code)."""
    client.input_arena.resize(input_bytes)
    client.output_table.resize(table_bytes(max_iters, len(expected)))
    outputs = [{"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape)} for t in expected]
    header, _ = client.request(Op.MAP, timeout_s, input_bytes=client.input_arena.size,
                               table_bytes=client.output_table.size, outputs=outputs)
    return int(header["input_base"])


@dataclass
class ArenaSide:
    client: WorkerClient
    program: TaskProgram | None           # set for the candidate: its outputs get checked
    inputs: BlockInputs
    expected: list[torch.Tensor]          # the reference's outputs on probe inputs: structure
    input_base: int
    timeout_s: float
    tolerance: Tolerance | None = None
    check_fraction: float = 1.0
    other: WorkerClient | None = None
    overhead_from: "ArenaSide | None" = None   # the candidate uses the baseline's null blocks
    check_budget: float = 0.0                  # checks may cost this share of the timed wall time
    check_ns: list[float] = field(default_factory=list)
    blocks: list[BlockWall] = field(default_factory=list)
    null_ns: dict[int, list[float]] = field(default_factory=dict)
    checks: int = 0
    contract_blocks: int = 0                   # untimed contract blocks run (contract_blocks.py)
    _staged: dict | None = None
    _pending: tuple[list[tuple], BlockLayout] | None = None   # a block whose output is to be checked

    # -- one block --------------------------------------------------------------------------------
    def _stage(self, layout: BlockLayout) -> None:
        """Views of the arena for this block's calls, built in the worker before the inputs are
        written.  (Where inputs change shape by seed, the shapes are known to the worker here,
        before the timed request; their values are not.)"""
        spec = layout.to_dict()
        if spec == self._staged:   # same views: only free the previous block's outputs
            self.client.request(Op.STAGE, self.timeout_s, layout=None)
            return
        if layout.nbytes > self.client.input_arena.size:
            # (+ IN_PAGE_SPAN: a later block's drawn start must not force a re-map mid-run)
            self.input_base = map_arenas(self.client, ARENA_SLACK * layout.nbytes + IN_PAGE_SPAN, self.expected,
                                         len(layout.bases), self.timeout_s)
        self.client.request(Op.STAGE, self.timeout_s, layout=spec)
        self._staged = spec

    def _timed_request(self, iters: int, null: bool) -> tuple[float, dict, float | None, float | None]:
        """Wall ns of one `run` request from thaw to frozen-again, its reply, and the CPU the
        other side and this side used meanwhile."""
        cpu0 = None
        if self.other is not None:
            self.other.freeze()
            cpu0 = self.other.cpu_seconds()
        own0 = self.client.cpu_seconds()
        t0 = time.perf_counter_ns()
        header, _ = self.client.request(Op.RUN, self.timeout_s, iters=iters, null=null)   # thaws first
        self.client.freeze()   # from here on the worker's memory is what it was at the reply
        wall = time.perf_counter_ns() - t0
        cpu = None if cpu0 is None else self.other.cpu_seconds() - cpu0
        own = self.client.cpu_seconds()
        return float(wall), header, cpu, None if own is None or own0 is None else own - own0

    # The scorer's clock timed each block: work the candidate hid from its worker's timer was
    # paid for, so there is no unaccounted time to look for (pipeline/process_checks.py).
    scorer_clocked = True

    timer = "scorer_wall_clock"

    def gate_checks(self, sizes: tuple[str, ...], seed: int) -> tuple[str, ...]:
        """Nothing past the gate's calls: the scorer's clock leaves no device window to hide work from."""
        return ()

    def choose_timing_mode(self, task_mode: str, per_call_ns: float | None) -> None:
        """None: one way to time a block on the CPU (timing modes are CUDA's)."""
        return None

    def gate_side(self) -> "ArenaSide":
        """The gate's calls go through this side's arenas, as timed calls do (pipeline/gate.py)."""
        return self

    def monitor(self, dev):
        """What watches the device per block: the device session's own monitor."""
        return dev.monitor

    def fallback_warnings(self) -> tuple[str, ...]:
        return ()   # one timer, the scorer's: nothing to fall back from

    def pair_diagnostics(self, candidate: "ArenaSide", iters: int) -> dict:
        """What the verdict keeps of how this (baseline) side's pairs were timed: the null blocks
        and the per-block overhead subtracted from both sides."""
        return {"null_block_ns": self.null_ns.get(iters, []), "overhead_ns": self.overhead_ns_at(iters)}

    def overhead_ns_at(self, iters: int) -> float | None:
        """The overhead subtracted from blocks of `iters` calls at the end of the run (or None)."""
        seen = [b.wall_ns - b.reported_ns for b in self.blocks if b.iters == iters]
        return statistics.median(seen) if seen else None

    def finish(self) -> None:
        """After the last block: its check, if due, and the tripwires that otherwise run before
        the next one."""
        self._check_pending()
        self.client.request(Op.STAGE, self.timeout_s, layout=None)

    def end_pair(self) -> None:
        """The timed-output check of this side's block of the pair that just ended, if it was
        drawn (the sampler's `pair_end`: contract_blocks.pair_end)."""
        self._check_pending()

    def _check_pending(self) -> None:
        if self._pending is None:
            return
        block, layout = self._pending
        self._pending = None
        t0 = time.perf_counter_ns()
        self._check(block, layout)
        self.check_ns.append(time.perf_counter_ns() - t0)

    def contract_block(self, transform: str, iters: int, seed: int, plan: ContractBlocks) -> None:
        """One untimed block of `iters` calls on the inputs of `seed` under `transform`, made and
        run as a timed block is; the candidate's checked at one iteration (contract_blocks.py)."""
        usual = self.inputs.get(seed, iters)
        block = plan.transformed(usual, transform)
        layout = BlockLayout.of(block, start=in_page_start(seed))
        self._stage(layout)
        self.client.freeze()
        layout.write(self.client.input_arena, block)
        wall, header, _, _ = self._timed_request(iters, null=False)
        reported_block_ns(self.client.label, header, wall)
        self.contract_blocks += 1
        if self.program is None:
            return
        k = plan.checked_iteration(iters)
        call = plan.call(transform, self.inputs.size, usual[k])
        if call.skipped is not None:
            return
        outs = self._outputs_of(k, f"contract block iteration {k}")
        ins = [record_of(x) for x in layout.read(self.client.input_arena, k)]
        fails = verify_call(self.program, call.inputs, outs, ins, self.tolerance, expected=call.expected,
                            atol_scale=call.atol_scale, size=self.inputs.size)
        if fails:
            raise rejection(transform, k, fails)

    def overhead_ns(self, layout: BlockLayout) -> float:
        """The baseline worker's per-block cost of everything but the kernel, at this block size.

        Once the baseline has run real blocks of this size: the median of their wall time less
        the time its own (trusted) timer measured around the calls, so thaw, messaging, the
        table, the reply and the freeze after real work are all in it.  Before that: the median
        of NULL_BLOCKS null blocks (a kernel that only allocates its outputs), which miss the
        freeze-after-work part (~0.5 ms a block here).

        Every side runs those null blocks before its first real block of a size, the baseline's
        timed and the others' discarded: each worker's heap then holds what the other's does
        before the pairs (a history one side lacks made its blocks faster or slower: #38)."""
        iters = len(layout.bases)
        if iters not in self.null_ns:   # (this side's first block of this size)
            self.null_ns[iters] = [self._null_block(layout) for _ in range(NULL_BLOCKS)]
        nulls = self.null_ns[iters]
        if self.overhead_from is not None:
            return self.overhead_from.overhead_ns(layout)
        seen = self.overhead_ns_at(iters)
        return seen if seen is not None else statistics.median(nulls)

    def _null_block(self, layout: BlockLayout) -> float:
        self._stage(layout)
        self.client.freeze()   # as before a real block: the thaw is inside the window
        return self._timed_request(len(layout.bases), null=True)[0]

    def run_block(self, iters: int, seed: int) -> float:
        self._check_pending()   # (a check still due runs before this worker runs again, whoever calls)
        block = self.inputs.get(seed, iters)
        layout = BlockLayout.of(block, start=in_page_start(seed))
        overhead = self.overhead_ns(layout)
        self._stage(layout)
        self.client.freeze()   # before the inputs are written: nothing of it may see them early
        layout.write(self.client.input_arena, block)
        wall, header, other_cpu, own_cpu = self._timed_request(iters, null=False)
        reported = reported_block_ns(self.client.label, header, wall)
        self.blocks.append(BlockWall(wall, reported, iters, other_cpu, own_cpu))
        if self.program is not None and should_check(self.checks, self.check_share(wall)):
            self._pending = (block, layout)
        return per_iteration_ns(wall, overhead, iters)

    def check_share(self, wall_ns: float) -> float:
        """The chance this block is checked: the configured fraction, raised (up to every block)
        as far as checks, at their measured cost, stay within `check_budget` of the timed time.

        A candidate that returns a stale or skipped answer in a share x of its calls gains at
        most 1/(1-x) and escapes C checks with probability (1-x)^C: the more checks, the less
        any such gamble pays (docs/security.md)."""
        if not self.check_ns or self.check_budget <= 0:
            return self.check_fraction
        return min(1.0, max(self.check_fraction, self.check_budget * wall_ns / statistics.median(self.check_ns)))

    # -- the gate's calls (CPU) ------------------------------------------------------------------
    def gate_call(self, inputs: tuple, poison_bytes: int, pattern: int,
                  like: list) -> tuple[list[OutputRecord], list[OutputRecord]]:
        """One untimed call on `inputs` (the scorer's), for the gate: written into the arena
        while the worker is frozen, the memory it allocates next poisoned with `pattern`; its
        outputs read from the frozen worker at the table's addresses, its inputs from the arena,
        as a timed iteration's are.  `like`: the reference's outputs for these inputs (they
        bound what an output may span).  The same staged views serve every call of a size, so a
        cache keyed on an input's identity or address sees new values at the same address."""
        layout = BlockLayout.of([inputs])
        self._stage(layout)
        self.client.freeze()
        layout.write(self.client.input_arena, [inputs])
        self.client.request(Op.GATE_CALL, self.timeout_s, poison_bytes=poison_bytes, pattern=pattern)
        self.client.freeze()
        outs = self._outputs_of(0, "gate call", _span_limit(like))
        return outs, [record_of(x) for x in layout.read(self.client.input_arena, 0)]

    # -- timed-output checks ----------------------------------------------------------------------
    def _check(self, block: list[tuple], layout: BlockLayout) -> None:
        k = secrets.randbelow(len(block))   # chosen after the block ran, while the worker is frozen
        outs = self._outputs_of(k)
        ins = [record_of(x) for x in layout.read(self.client.input_arena, k)]
        fails = verify_call(self.program, block[k], outs, ins, self.tolerance,
                            expected=expected_outputs(self.program, block[k], self.expected), size=self.inputs.size)
        self.checks += 1
        if fails:
            raise CandidateRejected(fails[0].reason, f"timed iteration {k}: {fails[0].message}")

    def _outputs_of(self, k: int, where: str | None = None, limit: int | None = None) -> list[OutputRecord]:
        """Iteration k's outputs, as the table describes them, read from the frozen worker.
        `where` names the call in a rejection; `limit` bounds an output's bytes and elements
        (default: from the timed size's outputs)."""
        n = len(self.expected)
        where = where or f"timed iteration {k}"
        limit = limit if limit is not None else _span_limit(self.expected)
        recs = table_records(self.client.output_table, k, n)
        if recs[0, 0] == KIND_STRUCTURE:
            raise CandidateRejected("output.structure", f"{where}: {int(recs[0, 1])} outputs, expected {n}")
        return [self._read_output(r, exp, where, limit) for r, exp in zip(recs, self.expected)]

    def _read_output(self, r: np.ndarray, expected: torch.Tensor, where: str, limit: int) -> OutputRecord:
        """One output as the table describes it, its bytes read from the frozen worker.
        (`expected`: the timed size's output in this place, which KIND_EXPECTED stands for.)"""
        if r[0] == KIND_OTHER:
            return OutputRecord("not a tensor (or not a strided one on the CPU)", "", (), (), "", False, None)
        if r[0] == KIND_EXPECTED:   # address only: the expected dtype and shape, contiguous
            dtype, shape, strides = expected.dtype, tuple(expected.shape), expected.contiguous().stride()
        elif r[0] in (KIND_TENSOR, KIND_DEVICE) and 0 <= r[2] < len(DTYPES) and 0 <= r[3] <= MAX_DIMS:
            dtype, nd = DTYPES[int(r[2])], int(r[3])
            shape = tuple(int(x) for x in r[4:4 + nd])
            strides = tuple(int(x) for x in r[4 + MAX_DIMS:4 + MAX_DIMS + nd])
            if r[0] == KIND_DEVICE:   # no values to read: the device alone decides (correctness.device)
                device = DEVICES[int(r[1])] if 0 <= r[1] < len(DEVICES) else "other"
                return OutputRecord("Tensor", str(dtype).replace("torch.", ""), shape, strides, device, False, None)
        else:
            raise CandidateRejected("output.structure", f"{where}: an output is missing")
        if any(x < 0 for x in shape + strides):
            raise CandidateRejected("tamper.protocol", f"{where}: negative shape or stride")
        numel = math.prod(shape)
        span = 0 if numel == 0 else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
        nbytes = span * dtype.itemsize
        if nbytes > limit:
            raise CandidateRejected("correctness.shape", f"{where}: output spans {nbytes} bytes")
        # Elements as well as bytes: a stride-0 view of a huge shape spans a few bytes, and the
        # scorer's own copy of it (below) would not fit in memory, or overflow (#39).
        if numel > limit:
            raise CandidateRejected("correctness.shape", f"{where}: output of shape {list(shape)} "
                                    f"has {numel} elements")
        try:
            raw = read_process_memory(self.client.worker_pid, int(r[1]), nbytes, timeout_s=self.timeout_s)
        except MemoryReadTimeout as exc:
            self.client.kill()   # (its death is what ends the blocked read)
            raise CandidateRejected("tamper.protocol", f"{where}: output memory unreadable: "
                                    f"{exc}") from None
        except OSError as exc:
            raise CandidateRejected("tamper.protocol", f"{where}: output memory unreadable "
                                    f"at the reported address ({exc})") from None
        tensor = raw.view(dtype).as_strided(shape, strides) if numel else torch.empty(shape, dtype=dtype)
        if not tensor.is_contiguous():   # (the read is this process's own copy: a dense one is kept as it is)
            tensor = tensor.clone()
        lo, hi = int(r[1]), int(r[1]) + nbytes
        aliases = nbytes > 0 and lo < self.input_base + self.client.input_arena.size and self.input_base < hi
        return OutputRecord("Tensor", str(dtype).replace("torch.", ""), shape, strides, "cpu", aliases, tensor)


def _span_limit(outputs: list) -> int:
    """The most bytes (and elements) an output may span: 16x what the reference's outputs hold."""
    return 16 * sum(t.numel() * t.element_size() for t in outputs if hasattr(t, "numel")) + 4096
