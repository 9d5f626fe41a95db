"""What differs between the CPU and the CUDA side is the sides' own behaviour, asked through one
protocol (sides/build.Side): the pipeline never asks which device it has."""
import pytest

from perfbench.core.errors import CandidateRejected
from perfbench.isolation.wire.protocol import Op
from perfbench.sides.cpu_side import ArenaSide
from perfbench.sides.cuda_side import WorkerSide


class Client:
    """A worker client that answers PROFILE with `findings` and records every request."""

    label = "candidate"

    def __init__(self, findings=()):
        self.findings, self.requests = list(findings), []

    def request(self, op, timeout_s, **fields):
        self.requests.append((op, timeout_s, fields))
        return ({"findings": self.findings.pop(0)} if op == Op.PROFILE else {}), []


def test_the_cpu_side_times_with_the_scorers_clock_and_has_no_modes_nor_profiles():
    assert ArenaSide.timer == "scorer_wall_clock"
    side = ArenaSide.__new__(ArenaSide)   # (the behaviour asked of it needs no worker)
    assert side.choose_timing_mode("auto", 1e6) is None and side.gate_checks(("small",), 1) == ()


@pytest.mark.parametrize("task_mode,per_call_ns,mode,set_mode", [
    ("events", 1e3, "events", False), ("auto", 1e9, "events", False), ("graph", 1e6, "graph", True)])
def test_the_cuda_side_chooses_its_timing_mode_and_sets_any_but_the_default(task_mode, per_call_ns, mode, set_mode):
    client = Client()
    side = WorkerSide(client, None, "large", 7.0)
    assert WorkerSide.timer == "cuda_events"
    assert side.choose_timing_mode(task_mode, per_call_ns) == mode
    assert client.requests == ([(Op.SET_MODE, 7.0, {"mode": mode})] if set_mode else [])


def test_the_cuda_side_profiles_one_call_per_size_and_refuses_work_outside_the_window():
    client = Client(findings=[[], None])
    side = WorkerSide(client, None, "large", 5.0)
    warnings = side.gate_checks(("small", "large"), 3)
    assert [(op, t, f["size"], f["seed"]) for op, t, f in client.requests] == [
        (Op.PROFILE, 20.0, "small", 3), (Op.PROFILE, 20.0, "large", 3)]
    assert warnings == ("side-stream check could not run for size 'large': the profile held no timing window "
                        "(None device activities)",)
    with pytest.raises(CandidateRejected, match=r"size 'small': kernel on stream 7 \(and 1 more\)") as exc:
        WorkerSide(Client(findings=[["kernel on stream 7", "copy"]]), None, "large", 5.0).gate_checks(("small",), 3)
    assert exc.value.reason == "tamper.side_stream"
