"""The worker protocol's request names (#40): one `Op` enum both ends use, every request with a
handler in the worker, and no request sent by a bare string."""
import json
import re
from pathlib import Path

import pytest

from perfbench.isolation.processes.worker import _WorkerState, handlers
from perfbench.isolation.processes.worker_handle import candidate_reason
from perfbench.isolation.wire.protocol import Op

PACKAGE = Path(__file__).resolve().parents[2] / "perfbench"


def test_every_request_has_a_handler_and_every_handler_a_request():
    table = handlers(_WorkerState(), lambda: {})
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
