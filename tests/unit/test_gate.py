"""The correctness gate's conversation with a worker, against a fake worker that runs a trusted
kernel in this process: one call per request, each bounded by the call timeout."""
from pathlib import Path

import pytest
import torch

from perfbench.core.errors import CandidateRejected
from perfbench.isolation.wire.protocol import encode_values
from perfbench.pipeline.gate import gate
from perfbench.task.correctness import POISON_PATTERNS
from perfbench.task.program import TaskProgram
from perfbench.task.spec import load_task

TASK = Path(__file__).parents[1] / "fixtures" / "tiny_task"


class FakeWorker:
    """Answers `check` like the worker: the kernel on the task's inputs, encoded."""

    label = "candidate"

    def __init__(self, program: TaskProgram, kernel, results_per_reply: int = 1):
        self.program, self.kernel, self.results_per_reply = program, kernel, results_per_reply
        self.requests: list[tuple[float, list[int], list[int]]] = []

    def request(self, op, timeout_s, **kw):
        assert op == "check"
        self.requests.append((timeout_s, kw["seeds"], kw["poisons"]))
        results, blobs = [], []
        for seed in kw["seeds"]:
            for _ in kw["poisons"]:
                inputs = self.program.make_inputs(seed, kw["size"])
                out_meta, out_blobs = encode_values([self.kernel(*inputs)], inputs)
                in_meta, in_blobs = encode_values(list(inputs))
                results += [{"outputs": out_meta, "inputs": in_meta}] * self.results_per_reply
                blobs += (out_blobs + in_blobs) * self.results_per_reply
        return {"results": results}, blobs


@pytest.fixture
def program():
    return TaskProgram(load_task(TASK), "cpu")


def test_every_gate_call_is_its_own_request_bounded_by_the_call_timeout(program):
    worker = FakeWorker(program, lambda x, y: torch.add(y, x, alpha=2))
    seeds = [11, 12, 13]
    checks, fails = gate(worker, program, seeds, timeout_s=7.5)
    assert (checks, fails) == (len(program.spec.sizes) * len(seeds), [])
    # A hung call is killed after one timeout, not after one per call of the size.
    assert {t for t, _, _ in worker.requests} == {7.5}
    assert [(s, p) for _, s, p in worker.requests] == [
        ([seed], [pattern]) for _ in program.spec.sizes for seed in seeds for pattern in POISON_PATTERNS]


def test_a_wrong_kernel_stops_the_gate_at_its_first_input_set(program):
    worker = FakeWorker(program, lambda x, y: torch.add(y, x, alpha=3))
    checks, fails = gate(worker, program, [11, 12, 13], timeout_s=5)
    assert checks == 1 and [f.reason for f in fails] == ["correctness.mismatch"]
    assert len(worker.requests) == len(POISON_PATTERNS)


def test_a_reply_with_more_calls_than_asked_is_a_protocol_violation(program):
    worker = FakeWorker(program, lambda x, y: torch.add(y, x, alpha=2), results_per_reply=2)
    with pytest.raises(CandidateRejected) as exc:
        gate(worker, program, [11], timeout_s=5)
    assert exc.value.reason == "tamper.protocol" and "2 results for 1 call" in exc.value.message


def test_the_scorers_own_input_error_stops_the_gate_before_that_sets_calls(program, monkeypatch):
    """Input sets are made on a thread ahead of their calls: an error making one still reaches the
    caller, and no call runs on the set it could not make."""
    worker = FakeWorker(program, lambda x, y: torch.add(y, x, alpha=2))
    made = program.make_inputs_many

    def failing(seeds, size, cores=None):
        if seeds == [12]:
            raise RuntimeError("maker failed on seed 12")
        return made(seeds, size, cores)

    monkeypatch.setattr(program, "make_inputs_many", failing)
    with pytest.raises(RuntimeError, match="seed 12"):
        gate(worker, program, [11, 12, 13], timeout_s=5)
    assert [s for _, s, _ in worker.requests] == [[11]] * len(POISON_PATTERNS)
