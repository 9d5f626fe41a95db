"""The worker protocol's request names (#40): one `Op` enum both ends use, every request with a
handler in the worker, and no request sent by a bare string."""
import json
import re
from pathlib import Path

import pytest

from perfbench.isolation.processes.worker import handlers
from perfbench.isolation.processes.worker_state import WorkerState
from perfbench.isolation.processes.worker_client import candidate_reason
from perfbench.isolation.wire.protocol import Op

PACKAGE = Path(__file__).resolve().parents[2] / "perfbench"


def test_every_request_has_a_handler_and_every_handler_a_request():
    table = handlers(WorkerState(), lambda: {})
    assert set(table) == set(Op) - {Op.EXIT}   # (serve answers EXIT itself)
    assert table["run"] is table[Op.RUN]        # the wire's plain string finds the same handler


def test_an_op_is_its_name_on_the_wire_and_in_messages():
    assert json.dumps({"op": Op.GATE_CALL}) == '{"op": "gate_call"}'
    assert f"during '{Op.STAGE}'" == "during 'stage'"


def test_no_request_is_sent_by_a_bare_string():
    bare = [f"{f.relative_to(PACKAGE)}:{n}" for f in PACKAGE.rglob("*.py")
            for n, line in enumerate(f.read_text().splitlines(), 1) if re.search(r'\.request\("', line)]
    assert bare == []


@pytest.mark.parametrize("code,reason", [
    ("candidate.raised", "candidate.raised"), ("tamper.timer_patched", "tamper.timer_patched"),
    ("correctness.nan", "correctness.nan"), ("output.not_tensor", "output.not_tensor"),
    ("resource.disk", "resource.disk"), ("worker.error", "worker.error"),
    ("usage", "candidate.raised"),   # a bad call of the candidate's (a trusted worker's is a UsageError)
    # codes that blame something else, or are not codes: tamper.protocol (None here)
    ("infra.retry", None), ("scorer.crashed", None), ("usage.bad", None), ("harness.timeout", None),
    ("Candidate.raised", None), ("candidate.", None), ("candidate.raised; infra.retry", None),
    ("candidate." + "x" * 41, None), ("candidate.raised\n", None), (7, None), (None, None), (["candidate.raised"], None),
])
def test_a_worker_may_only_blame_the_candidate(code, reason):
    """#63: the fuzz test asserted only that a code holds a dot; a prefix loosened to any word
    (`infra.retry`) let a caught cheat ask a harness for another roll."""
    assert candidate_reason(code) == reason


# -- #58 (2): replies that cannot crash the scorer ----------------------------------------------------
def _reply(header_bytes: bytes, blobs=(), budget: int = 0):
    from multiprocessing import Pipe

    from perfbench.isolation.wire.protocol import recv

    ours, theirs = Pipe()
    try:
        theirs.send_bytes(header_bytes)
        for b in blobs:
            theirs.send_bytes(b)
        return recv(ours, budget)
    finally:
        ours.close()
        theirs.close()


@pytest.mark.parametrize("header,why", [
    (b'{"id": 1, "total_ns": ' + b"9" * 400 + b"}", "integer 9{40} out of range"),
    (b'{"id": 1, "total_ns": ' + b"9" * 5000 + b"}", "malformed reply header"),   # past Python's own limit
    (b'{"id": 1, "total_ns": 18446744073709551616}', "out of range"),
    (b'{"id": 1, "total_ns": -9223372036854775809}', "out of range"),
    (b'{"id": 1, "total_ns": NaN}', "NaN in the reply"),
    (b'{"id": 1, "total_ns": -Infinity}', "-Infinity in the reply"),
    (b'{"id": 1, "total_ns": 1e999}', "out of range"),
    (b'{"id": 1, "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply to parse"),
    (b'{"id": 1, "x": ' + b"[" * 16 + b"]" * 16 + b"}", "nested deeper than 16"),
    (b'{"id": 1, "n_blobs": true}', "bad blob count True"),
    (b'{"id": 1, "n_blobs": 100001}', "bad blob count 100001"),
    (b'[1, 2]', "not an object"),
    (b'\xff\xfe', "malformed reply header"),
])
def test_a_reply_past_the_limits_is_a_protocol_error_not_a_crash(header, why):
    from perfbench.isolation.wire.protocol import ProtocolError

    with pytest.raises(ProtocolError, match=why):
        _reply(header)


def test_the_limits_pass_every_real_reply():
    deepest = b'{"id": 1, "x": ' + b"[" * 15 + b"]" * 15 + b', "a": -9223372036854775808, "b": 18446744073709551615, ' \
              b'"c": 1.5e300, "n_blobs": 0}'
    header, blobs = _reply(deepest)
    assert header["b"] == 2 ** 64 - 1 and header["c"] == 1.5e300 and blobs == []


def test_a_replys_blobs_are_bounded_by_what_the_request_may_return():
    from perfbench.isolation.wire.protocol import ProtocolError

    head = json.dumps({"id": 1, "n_blobs": 3}).encode()
    header, blobs = _reply(head, [b"a" * 1000, b"b" * 1000, b"c" * 48], budget=2048)   # exactly the budget
    assert [len(b) for b in blobs] == [1000, 1000, 48]
    with pytest.raises(ProtocolError, match="blob 2 of 3 is past the 2048 bytes this request may return"):
        _reply(head, [b"a" * 1000, b"b" * 1000, b"c" * 49], budget=2048)
    with pytest.raises(ProtocolError, match="blob 0 of 1 is past the 0 bytes"):   # a request answered by its header
        _reply(json.dumps({"id": 1, "n_blobs": 1}).encode(), [b"x"])


def test_the_budget_of_one_calls_reply():
    import torch

    from perfbench.sides.output_checks import reply_budget

    x, out = (torch.zeros(1024), torch.zeros(256, dtype=torch.float64)), [torch.zeros(2048)]
    assert reply_budget(x, out) == 4 * (4096 + 2048 + 8192) + (1 << 20)
    assert reply_budget(x, out[0]) == reply_budget(x, out)
    assert reply_budget(x, None) == 4 * (6144 + 4 * 6144 + (64 << 20)) + (1 << 20)
