"""A whole score with fake workers (#40): the gate, the AB-BA pairs, the timed output checks and
the early stop, run by the real pipeline (`score_perf`, `TimingRun`, the sides, the sampler)
against workers that answer in this process.

`InProcessWorker` is the real worker's request handlers (`worker.handlers`) on real arenas,
without a process, a sandbox or a cgroup: what the scorer writes into the input arena the
handlers read, and the scorer reads the outputs from this process's memory, as it reads a
worker's.  So these tests pin what the pipeline does with its workers (which it asks for, in
which order, what it checks and when it stops), not what the sandbox stops (tests/adversarial).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from contextlib import nullcontext
from pathlib import Path

import pytest

from perfbench.core.errors import CandidateRejected, PerfbenchError, UsageError
from perfbench.core.verdict import VERDICT_REJECTED, VERDICT_SCORED
from perfbench.core.score_key import ScoreKey, block_seed
from perfbench.isolation.processes.worker import handlers
from perfbench.isolation.processes.worker_state import WorkerState
from perfbench.isolation.sandbox.plan import Isolation
from perfbench.isolation.wire.arena import SharedArena
from perfbench.isolation.wire.protocol import Op
from perfbench.pipeline.config import PerfJob, ScoreConfig
from perfbench.pipeline.score_processes import score_perf
from perfbench.pipeline.sandboxes import ScorerStart
from perfbench.task.spec import load_task
from perfbench.timing.sampler import SamplerConfig
from perfbench.timing.schedule import SOLUTION

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task"


def _integers(value) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [n for v in value for n in _integers(v)] if isinstance(value, list) else []


class InProcessWorker:
    """`WorkerClient`'s interface, answered in this process by the real request handlers."""

    def __init__(self, label: str, untrusted: bool):
        self.label, self.untrusted = label, untrusted
        self.input_arena, self.output_table = SharedArena(f"{label}-inputs"), SharedArena(f"{label}-table")
        self._state = WorkerState()
        self._answer = handlers(self._state, lambda: {}, (self.input_arena.fd, self.output_table.fd))
        self.isolation: Isolation | None = None
        self.startup_s: float | None = None
        self.worker_pid: int | None = None
        self.ops: list[str] = []
        self.starts: list[int] = []   # where each new block layout (STAGE) starts in the arena
        self.received: list[int] = []   # every integer any request carried (#58: no secret)
        self._cpu_s = 0.0   # CPU this worker's own requests used: the tamper checks read it

    def start(self, timeout_s: float) -> Isolation:
        self.request(Op.PING, timeout_s)
        self.startup_s, self.worker_pid = 0.0, os.getpid()
        self.isolation = Isolation(missing=("sandbox: an in-process fake worker",))
        return self.isolation

    def request(self, op: Op, timeout_s: float, **fields) -> tuple[dict, list[bytes]]:
        req = json.loads(json.dumps(dict(fields, op=op)))   # what crosses the wire, as JSON does
        self.ops.append("null_run" if op is Op.RUN and fields.get("null") else str(op.value))
        self.received.extend(_integers(req))
        if op is Op.STAGE and fields.get("layout"):
            self.starts.append(fields["layout"].get("start", 0))
        t0 = time.thread_time()
        try:
            reply, blobs = self._answer[op](req)
            if op is Op.LOAD:   # the tripwires, less the scorer's own threads (its gate's, its
                # memory reads): in one process they come and go beside the candidate's calls
                integrity = self._state.integrity
                every_new = integrity.new_threads
                integrity.new_threads = lambda: [t for t in every_new() if not t.name.startswith("perfbench-")]
        except CandidateRejected:
            raise
        except PerfbenchError as exc:   # as WorkerClient.request maps a worker's "usage" error
            if not self.untrusted:
                raise UsageError(f"{self.label}: {exc}") from None
            raise CandidateRejected("candidate.raised", f"{self.label}: {exc}") from None
        finally:
            self._cpu_s += time.thread_time() - t0
        return json.loads(json.dumps(reply)), blobs

    def freeze(self) -> None:
        """Nothing to freeze: the handlers run only when asked."""

    def thaw(self) -> None:
        """Nothing to thaw (see freeze)."""

    def cpu_seconds(self) -> float:
        return self._cpu_s

    @property
    def cpu_resolution_s(self) -> float:
        return 1e-9   # (time.thread_time)

    def log_tail(self, limit: int = 4000) -> str:
        return ""

    def kill(self) -> None:
        """No process to kill; close() releases the arenas."""

    def close(self) -> None:
        self.input_arena.close()
        self.output_table.close()

    def __enter__(self) -> "InProcessWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class InProcessWorkers:
    """The `Workers` a score asks for its processes: fresh in-process ones, recorded in order."""

    nondumpable = True

    def __init__(self) -> None:
        self.made: list[InProcessWorker] = []

    def ready(self, timeout_s: float) -> None:
        """Always ready: no zygote to wait for."""

    def _new(self, label: str, untrusted: bool) -> InProcessWorker:
        self.made.append(InProcessWorker(label, untrusted))
        return self.made[-1]

    def candidate(self, setup) -> InProcessWorker:
        return self._new("candidate", True)

    def baseline(self, setup, j: int | None) -> InProcessWorker:
        worker = self._new("baseline", False)
        worker.j = j
        return worker

    def solution(self, setup):
        return self._new(SOLUTION, False) if setup.solution_file is not None else nullcontext(None)

    def provenance(self) -> dict:
        return {}


def score(candidate: Path, monkeypatch, task: Path = TASK, key: ScoreKey | None = None, **changes):
    monkeypatch.chdir(task)
    cfg = ScoreConfig(**{"sampler": SamplerConfig(min_pairs=6, max_pairs=12, warmup_s=0.0), "seed": 11,
                         "s_ref": 1000.0, "sandbox": False, **changes})
    workers = InProcessWorkers()
    said: list[str] = []
    job = PerfJob(load_task(task), candidate, "cpu", key or ScoreKey.from_seed(cfg.seed), cfg)
    result = score_perf(job, ScorerStart(None, {}, True), said.append, workers=workers)
    return result, workers, said


def test_a_whole_score_runs_the_gate_then_the_pairs_and_stops_once_the_reward_is_settled(monkeypatch):
    """A/A against s_ref 1000 with the earliest stop a score may be given (after 2 processes):
    R_perf is 0 whatever more pairs say, so the score stops after the second of three processes
    (never after the first: its CI knows nothing between processes)."""
    result, workers, said = score(TASK / "baseline.py", monkeypatch, stop_min_processes=2)
    assert result.verdict == VERDICT_SCORED and result.reasons == ()
    stopping = result.comparison.extra["stopping"]
    assert (stopping["decision"], stopping["processes_run"]) == ("r_perf_zero", 2)
    assert "stopping after 2 of 3 processes: r_perf_zero" in said
    # fresh workers for every process, the candidate's asked for first: the untimed pair that
    # gates, then one pair per timed process
    assert [w.label for w in workers.made] == ["candidate", "baseline"] * 3
    assert [w.untrusted for w in workers.made] == [True, False] * 3
    assert [w.j for w in workers.made if w.label == "baseline"] == [None, 0, 1]
    gate_cand, gate_base, *timed = workers.made
    # the gate: every size x every check seed, in the untimed pair only; nothing timed there
    # but the baseline alone (its workers' histories differ: #38)
    assert gate_cand.ops.count("gate_call") >= 2 * 3 and gate_cand.ops.count("run") == 0
    assert gate_base.ops.count("run") >= 3 and gate_base.ops.count("gate_call") == 0
    assert all(w.ops.count("gate_call") == 0 for w in timed)
    # the pairs: 6 per process (12 pairs over 3 processes, 6 being the task's minimum)
    samples = result.comparison.samples
    assert samples.processes == (0,) * 6 + (1,) * 6
    assert samples.n_pairs == 12 and result.speedup.low <= result.speedup.value <= result.speedup.high
    # both workers of a timed process got the same requests up to their last block: nothing
    # one side did before or between its pairs that the other did not (#38)
    def until_last_block(ops: list[str]) -> list[str]:
        return ops[:len(ops) - ops[::-1].index("run")]

    for cand, base in zip(timed[::2], timed[1::2]):
        assert until_last_block(cand.ops) == until_last_block(base.ops)
        assert cand.ops.count("run") >= 6 and cand.ops.count("null_run") >= 5
        # both blocks of a pair at one in-page offset, drawn anew per pair (#38: in_page_start)
        assert cand.starts == base.starts and len(set(cand.starts)) >= 4
    assert result.comparison.extra["timed_output_checks"] >= 2
    assert result.r_perf == 0.0
    # what the processes found reaches the verdict: the sandbox as process 0 saw it, each warning once
    assert result.isolation["missing"] == ["sandbox: an in-process fake worker"]
    assert result.warnings.count("sandbox layer missing: sandbox: an in-process fake worker") == 1
    assert result.clock_control["status"] == "not_applicable"


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_no_worker_is_handed_a_value_of_the_timing_key(monkeypatch):
    """#58 (1): every integer any worker received in a whole score (the gate's pair and every
    timed process, the candidate's and the baseline's).  Seeds are 62-bit; every one received is
    the worker key's (the weight init, the probe), none of the timing key's, which derives the
    gate's and every timed block's inputs.  What else a worker gets is small: sizes, counts,
    timeouts, a block's in-page offset (< 4096: where its inputs, which it reads, start)."""
    key = ScoreKey(timing=0x2A5F_0000_1234_5678, worker=0x1D00_0000_8765_4321)
    result, workers, _ = score(TASK / "baseline.py", monkeypatch, key=key, stop_min_processes=2)
    assert result.verdict == VERDICT_SCORED and result.seed == key.timing
    received = [n for w in workers.made for n in w.received]
    seeds = {n for n in received if abs(n) >= 1 << 32}
    assert seeds == {key.init_seed, key.probe_seed}
    assert max(abs(n) for n in received if n not in seeds) < 1 << 31
    # and those two are not values of the timing key under any label the scorer uses
    timing_values = {key.timing, *key.check_seeds(8), key.baseline_alone_seed(),
                     *(key.process_seed(j) for j in range(4))}
    timing_values |= {block_seed(s, k) for s in set(timing_values) for k in range(-1, 40)}
    assert not seeds & timing_values
    assert sum(w.ops.count("run") for w in workers.made) > 20   # (a whole score did run)
    # nor depend on it: another timing key, the same worker key, the same seeds handed out
    other, workers, _ = score(TASK / "baseline.py", monkeypatch, stop_min_processes=2,
                              key=ScoreKey(timing=key.timing ^ 0x0F0F_0F0F_0F0F, worker=key.worker))
    assert {n for w in workers.made for n in w.received if abs(n) >= 1 << 32} == seeds


def test_by_default_a_settled_score_still_measures_three_processes(monkeypatch):
    """The same A/A with the defaults: R_perf is settled after 2 processes, but the speedup is
    published too and 2 processes read it about twice as far off as 3 (#38)."""
    result, workers, said = score(TASK / "baseline.py", monkeypatch)
    stopping = result.comparison.extra["stopping"]
    assert (stopping["decision"], stopping["processes_run"], stopping["min_processes"]) == (None, 3, 3)
    assert stopping["look_confidence"] == 0.95   # no look, so no widened CI
    assert not any(line.startswith("stopping after") for line in said)
    assert result.comparison.samples.n_pairs == 18 and result.r_perf == 0.0
    # what each process cost (#59): starting and loading, then warm-up and pairs
    seconds = result.comparison.extra["process_seconds"]
    assert len(seconds) == 3 and all(set(p) == {"start_s", "sample_s"} for p in seconds)
    assert all(0 < p["start_s"] < 60 and 0 < p["sample_s"] < 60 for p in seconds)
    # and the report says which part of the processes' spread dominates
    from perfbench.cli.report import score_table

    st = result.comparison.summary.stability
    line = next(ln for ln in score_table(result).splitlines() if ln.startswith("processes"))
    assert line.endswith(f"; SD {100 * st.within_sd:.1f}% from their pairs, {100 * st.between_sd:.1f}% their own"), line


def test_without_early_stopping_every_process_runs(monkeypatch):
    result, workers, _ = score(TASK / "baseline.py", monkeypatch, stop_early=False)
    assert result.comparison.extra["stopping"]["processes_run"] == 3
    assert len(workers.made) == 8 and result.comparison.samples.n_pairs == 18


def rejected_as_wrong(source: str, monkeypatch, tmp_path):
    """Score a candidate written from `source`; it must be rejected for its outputs."""
    candidate = tmp_path / "candidate.py"
    candidate.write_text(source)
    result, workers, _ = score(candidate, monkeypatch)
    assert result.verdict == VERDICT_REJECTED
    assert result.reasons[0].code.startswith("correctness."), result.reasons
    return result, workers


def test_a_wrong_candidate_is_rejected_by_the_gate_and_never_timed(monkeypatch, tmp_path):
    result, workers = rejected_as_wrong("def kernel(x, y):\n    return x + y\n", monkeypatch, tmp_path)
    assert [w.label for w in workers.made] == ["candidate", "baseline"]
    assert workers.made[0].ops.count("run") == 0
    assert result.isolation["missing"] == ["sandbox: an in-process fake worker"]   # (rejected, still said)


def test_the_gate_checks_every_size_not_only_the_first(monkeypatch, tmp_path):
    """Right on the small size, wrong on the medium one (the timed size): the gate, not the timed
    checks, rejects it, before a single block is timed."""
    result, workers = rejected_as_wrong("import torch\n\n\ndef kernel(x, y):\n    out = torch.add(y, x, alpha=2)\n"
                                        "    if x.numel() == 4096:\n        out[-1] += 1\n    return out\n",
                                        monkeypatch, tmp_path)
    assert "medium" in result.reasons[0].message, result.reasons[0].message
    assert workers.made[0].ops.count("run") == 0


def test_a_candidate_right_in_the_gate_and_wrong_when_timed_is_rejected_by_the_timed_checks(monkeypatch, tmp_path):
    """Correct when the worker's gate handler called it (it looks up the stack), off by one in
    one element otherwise."""
    _, workers = rejected_as_wrong("import sys\n\nimport torch\n\n\ndef gated():\n    f = sys._getframe(1)\n"
                                   "    while f is not None and f.f_code.co_name != 'gate_call':\n        f = f.f_back\n"
                                   "    return f is not None\n\n\ndef kernel(x, y):\n    out = torch.add(y, x, alpha=2)\n"
                                   "    if not gated():\n        out[0] += 1\n    return out\n", monkeypatch, tmp_path)
    assert workers.made[0].ops.count("gate_call") >= 2 * 3   # it passed the gate
    assert workers.made[2].ops.count("run") >= 1   # it got as far as the timed blocks


def test_a_candidate_that_tells_timed_calls_by_their_inputs_placement_is_rejected_by_the_timed_checks(monkeypatch, tmp_path):
    """Protocol 5 gives timed blocks a drawn in-page offset and keeps gate calls on a page
    boundary, so a candidate can tell the two by its input's address.  It may: the timed-output
    checks, not the gate, are what a candidate cannot tell from the calls it is paid for."""
    _, workers = rejected_as_wrong("import torch\n\n\ndef kernel(x, y):\n    out = torch.add(y, x, alpha=2)\n"
                                   "    if x.data_ptr() % 4096:\n        out[0] += 1\n    return out\n",
                                   monkeypatch, tmp_path)
    assert workers.made[0].ops.count("gate_call") >= 2 * 3   # it passed the gate
    assert workers.made[2].ops.count("run") >= 1


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_a_live_solution_no_faster_than_the_baseline_is_said_whatever_the_candidate(monkeypatch, tmp_path):
    """The live s_ref's warning reads the solution's speedup, not the candidate's: a solution
    slower than the baseline beside a candidate faster than it (#63: the warning read the
    candidate's, and no test had a live solution that was not faster)."""
    task = tmp_path / "task"
    shutil.copytree(TASK, task)
    # the baseline's two passes and three more (blocks are sized on the fastest side, so a far
    # slower solution would make every block long)
    (task / "solution.py").write_text("def kernel(x, y):\n    t = x * 2 + y\n    return (t * 3 - y * 6) / 3 + y * 2\n")
    result, _, _ = score(TASK / "solution.py", monkeypatch, task=task, s_ref=None, s_ref_policy="live",
                         processes=2, sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0))
    assert result.verdict == VERDICT_SCORED
    assert result.comparison.solution_summary.speedup.value < 1.0 < result.speedup.value
    said = [w for w in result.warnings if w.startswith("live s_ref:")]
    assert len(said) == 1 and "not faster" in said[0] and result.r_perf is None, result.warnings
    assert f"ran {result.comparison.solution_summary.speedup.value:.3f}x the baseline" in said[0]


def test_the_checked_call_of_a_timed_block_may_be_its_last(monkeypatch):
    """The checked iteration is drawn from the whole block, after it ran: with the draw pinned to
    the top of its range, the last call of every block is the one read back (#63: a draw from
    len(block) - 1 never checked the last call; a cache hit there was never seen)."""
    from perfbench.sides import cpu_side

    drawn: list[tuple[int, int]] = []   # (block length, the iteration whose outputs were read)
    check, outputs_of = cpu_side.ArenaSide._check, cpu_side.ArenaSide._outputs_of

    def recording_check(self, block, layout):
        drawn.append((len(block), None))
        return check(self, block, layout)

    def recording_outputs_of(self, k, where=None, limit=None):
        if where is None and drawn and drawn[-1][1] is None:
            drawn[-1] = (drawn[-1][0], k)
        return outputs_of(self, k, where, limit)

    monkeypatch.setattr(cpu_side.secrets, "randbelow", lambda n: n - 1)
    monkeypatch.setattr(cpu_side.ArenaSide, "_check", recording_check)
    monkeypatch.setattr(cpu_side.ArenaSide, "_outputs_of", recording_outputs_of)
    result, _, _ = score(TASK / "solution.py", monkeypatch, processes=2,
                         sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0))
    assert result.verdict == VERDICT_SCORED and len(drawn) >= 2
    assert all(k == n - 1 for n, k in drawn) and max(n for n, _ in drawn) >= 2, drawn


def _own_inputs_setup(monkeypatch, tmp_path):
    """tiny_task with fixed keys, its TaskProgram, and a kernel off for values past 50 (right on
    the generator's draws, wrong under `scale:100`): (spec, cfg, key, program, the kernel's file)."""
    from perfbench.task.program import TaskProgram

    monkeypatch.chdir(TASK)
    spec, cfg, key = load_task(TASK), ScoreConfig(sandbox=False), ScoreKey(3, 4)
    wrong = tmp_path / "big_values.py"
    wrong.write_text("def kernel(x, y):\n    out = 2 * x + y\n    if x.abs().max() > 50:\n        out[0] += 1\n"
                     "    return out\n")
    return spec, cfg, key, TaskProgram(spec, "cpu", init_seed=key.init_seed), wrong


def test_the_contract_gate_through_a_worker_that_makes_its_own_inputs(monkeypatch, tmp_path):
    """CUDA's path of the input contract (no arena: the worker makes the inputs from the seed
    and applies the transform itself, pipeline/gate.contract_gate), on the real handlers.  A
    kernel right on the generator's draws and off for values past 50 is `correctness.contract`
    under `scale:100`; the baseline passes every standard transform of tiny_task (which declares
    none), and the inputs the worker transformed are the scorer's own (else input_mutated)."""
    from perfbench.pipeline.gate import contract_gate, load_side
    from perfbench.task.contract import STANDARD

    spec, cfg, key, program, wrong = _own_inputs_setup(monkeypatch, tmp_path)
    verdicts = {}
    for name, file in (("baseline", TASK / "baseline.py"), ("wrong", wrong)):
        with InProcessWorker(name, untrusted=True) as w:
            w.start(20)
            load_side(w, spec, "cpu", file, cfg, key.init_seed, key.probe_seed)
            verdicts[name] = contract_gate(w, program, key.contract_seed(), 20)
            assert w.ops.count("check") == verdicts[name][0]
    assert verdicts["baseline"] == (len(STANDARD) * 2, [],
                                    {"declared": False, "transforms": list(STANDARD), "skipped": {}})
    checks, fails, record = verdicts["wrong"]
    assert checks == 1 and [f.reason for f in fails] == ["correctness.contract"]
    assert fails[0].message.startswith("input contract scale:100, size 'small': correctness.mismatch: ")
    assert record["transforms"] == []


def test_contract_blocks_run_on_both_sides_between_pairs_and_reject_a_candidate_that_counts_its_calls(monkeypatch, tmp_path):
    """#58 (6): right through the gate and its contract (20 calls), then clamped, which only the
    contract's inputs reach.  The timed checks see nothing (the timed inputs are the generator's);
    a contract block among the timed ones, run as a timed block is, rejects it.  An honest
    candidate gets the same blocks, on both sides: both workers got the same requests (#38), and
    the verdict counts the candidate's."""
    counting = tmp_path / "counting.py"
    counting.write_text("import torch\n\n_calls = 0\n\n\ndef kernel(x, y):\n    global _calls\n    _calls += 1\n"
                        "    out = torch.add(y, x, alpha=2)\n    return out if _calls <= 20 else out.clamp_(-40.0, 40.0)\n")
    short = dict(processes=2, sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, max_iters_per_block=64))
    result, workers, _ = score(counting, monkeypatch, contract_block_share=1.0, **short)
    assert result.verdict == VERDICT_REJECTED and [r.code for r in result.reasons] == ["correctness.contract"]
    assert "an untimed block among the timed ones" in result.reasons[0].message
    assert workers.made[0].ops.count("gate_call") == 12 + 8   # through the gate's contract
    assert result.contract["blocks"] >= 1   # (counted up to the one that failed)
    # the same with the contract in the gate alone: scored
    result, _, _ = score(counting, monkeypatch, contract_block_share=0.0, **short)
    assert result.verdict == VERDICT_SCORED and result.contract["blocks"] == 0

    result, workers, _ = score(TASK / "solution.py", monkeypatch, contract_block_share=1.0, **short)
    assert result.verdict == VERDICT_SCORED
    timed = workers.made[2:]
    for cand, base in zip(timed[::2], timed[1::2]):
        last_run = len(cand.ops) - cand.ops[::-1].index("run")
        assert cand.ops[:last_run] == base.ops[:last_run] and base.ops[last_run:].count("run") == 0
        # a pair's two blocks, a contract block each after every pair (and warm-up round)
        assert cand.ops.count("run") >= 2 * 6
    assert result.contract["blocks"] >= 2 * 6 and result.contract["transforms"] == ["scale:100", "scale:0.01",
                                                                                     "shift:100", "shift:-100"]


def test_a_contract_block_through_a_worker_that_makes_its_own_inputs(monkeypatch, tmp_path):
    """CUDA's path of a contract block (cuda_side.WorkerSide: PREPARE names the transform, the
    worker makes and transforms the inputs, TIME, then FETCH of the drawn iteration), on the real
    handlers.  The baseline passes; a kernel off for values past 50 is `correctness.contract`;
    each ran one block of 4 calls, none of it a timed block or a timed check."""
    from perfbench.core.errors import CandidateRejected
    from perfbench.pipeline.gate import load_side
    from perfbench.sides.contract_blocks import ContractBlocks
    from perfbench.sides.cuda_side import WorkerSide

    from perfbench.sides import cuda_side

    digests: list[int] = []   # (a CPU worker takes no end-of-window digests: CUDA's timer does)
    monkeypatch.setattr(cuda_side, "check_end_digests", lambda label, k, seen, outs: digests.append(k))
    spec, cfg, key, program, wrong = _own_inputs_setup(monkeypatch, tmp_path)
    plan = ContractBlocks(program, ("scale:100",), key.contract_blocks_seed(0), 1.0)
    ops = {}
    for name, file in (("baseline", TASK / "baseline.py"), ("wrong", wrong)):
        with InProcessWorker(name, untrusted=True) as w:
            w.start(20)
            load_side(w, spec, "cpu", file, cfg, key.init_seed, key.probe_seed)
            side = WorkerSide(w, program, spec.timed_size, 20)
            transform, seed = plan.due()
            try:
                side.contract_block(transform, 4, seed, plan)
            except CandidateRejected as exc:
                ops[name] = (exc.reason, exc.message)
            else:
                ops[name] = side.contract_blocks
            assert w.ops[-3:] == ["prepare", "time", "fetch"] and side.blocks == [] and side.checks == 0
    assert ops["baseline"] == 1 and len(digests) == 2   # each fetched iteration's digests were compared
    reason, message = ops["wrong"]
    assert reason == "correctness.contract"
    assert message.startswith("input contract scale:100, an untimed block among the timed ones, iteration ")


def test_a_candidate_faster_than_the_speed_of_light_is_rejected_with_its_samples(monkeypatch):
    """The physics gate, wired: peaks of 1 MB/s make any real time impossible (the work's bytes
    would take seconds), so the honest candidate is rejected tamper.impossible_speed, and the
    verdict keeps the comparison and the sol section that show why."""
    from perfbench.pipeline import score_processes

    def slow_machine(program, spec, device, seed):
        return {"work": {"bytes": 10 ** 6, "flops": None}, "peaks": {
            "bandwidth_bytes_s": 1e6, "bandwidth_kind": "copy", "working_set_bytes": 10 ** 6, "flop_s": None,
            "dtype": None, "source": "a test"}}, None

    monkeypatch.setattr(score_processes, "speed_of_light_inputs", slow_machine)
    result, _, _ = score(TASK / "solution.py", monkeypatch, processes=1)
    assert result.verdict == VERDICT_REJECTED and [r.code for r in result.reasons] == ["tamper.impossible_speed"]
    assert result.reasons[0].message.endswith("at 0.0 GB/s: 1000000.0 us, memory-bound)")
    assert result.comparison is not None and result.sol["candidate"]["fraction_ci"][0] > 2
