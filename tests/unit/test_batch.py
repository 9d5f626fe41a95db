"""score-batch's parts without scoring: manifests, the resumable results file, retries, the summary."""
import json
from pathlib import Path

import pytest

from perfbench.batch import BatchOptions, BatchRecord, BatchRow, BatchSummary, ResultsFile, read_manifest
from perfbench.batch import runner
from perfbench.core.errors import UsageError


def _rec(id_, outcome="scored", speedup=2.0, r_perf=0.5, reasons=(), key="cpu-x-1t", task="t", error_kind=None):
    result = None if outcome == "error" else {"speedup": speedup, "r_perf": 0.0 if outcome == "rejected" else r_perf,
                                               "reasons": [{"code": c, "message": ""} for c in reasons]}
    return BatchRecord(id_, task, f"{id_}.py", outcome, 1, 1.0, error_kind=error_kind, result=result,
                       device_key=None if outcome == "error" else key)


def test_manifests_jsonl_csv_and_directory(tmp_path):
    (tmp_path / "m.jsonl").write_text('{"task": "tasks/a", "candidate": "c1.py"}\n\n'
                                      '{"task": "/abs/b", "candidate": "c2.py", "id": "two"}\n')
    rows = read_manifest(tmp_path / "m.jsonl")
    assert rows == [BatchRow("tasks/a:c1.py", str(tmp_path / "tasks/a"), str(tmp_path / "c1.py")),
                    BatchRow("two", "/abs/b", str(tmp_path / "c2.py"))]
    (tmp_path / "m.csv").write_text("task,candidate\ntasks/a,c1.py\n")
    assert read_manifest(tmp_path / "m.csv")[0].candidate == str(tmp_path / "c1.py")
    d = tmp_path / "cands"
    d.mkdir()
    for name in ("b.py", "a.py", "notes.txt"):
        (d / name).write_text("")
    assert [r.id for r in read_manifest(d, tmp_path / "task")] == ["a.py", "b.py"]


def test_a_row_may_set_its_problem_sizes(tmp_path):
    """#62: a SOL-ExecBench (or GPU MODE, KernelBench) row names its --set overrides."""
    (tmp_path / "m.jsonl").write_text('{"task": "p", "candidate": "s.json", "set": ["hidden_size=256", "workloads=0"]}\n')
    row = read_manifest(tmp_path / "m.jsonl")[0]
    assert row.set == ("hidden_size=256", "workloads=0")
    assert BatchRow.from_dict(json.loads(json.dumps(row.to_dict()))) == row
    (tmp_path / "m.csv").write_text("task,candidate,set\np,s.json,hidden_size=256 workloads=0\n")
    assert read_manifest(tmp_path / "m.csv")[0].set == row.set
    (tmp_path / "bad.jsonl").write_text('{"task": "p", "candidate": "s.json", "set": [3]}\n')
    with pytest.raises(UsageError, match="bad.jsonl:1: set must list NAME=VALUE overrides"):
        read_manifest(tmp_path / "bad.jsonl")


@pytest.mark.parametrize("name,text,needle", [
    ("m.jsonl", '{"task": "a"}\n', "m.jsonl:1: missing candidate"),
    ("m.jsonl", '{"task": "a", "candidate": "c"}\nnot json\n', "m.jsonl:2: not JSON"),
    ("m.jsonl", '{"task": "a", "candidate": "c"}\n{"task": "a", "candidate": "c"}\n', "row 2 repeats id 'a:c' (row 1)"),
    ("m.csv", "task,file\na,b\n", "the header must name the columns task and candidate"),
    ("m.txt", "", "a manifest is .jsonl or .csv"),
    ("m.jsonl", "", "no rows"),
])
def test_manifest_mistakes_are_one_line_usage_errors(tmp_path, name, text, needle):
    (tmp_path / name).write_text(text)
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        read_manifest(tmp_path / name)


def test_a_directory_needs_a_task(tmp_path):
    with pytest.raises(UsageError, match="needs --task"):
        read_manifest(tmp_path)


def test_results_file_resumes_and_drops_a_line_cut_by_a_kill(tmp_path):
    path = tmp_path / "r.jsonl"
    results = ResultsFile.open(path)
    results.append(_rec("a"))
    results.append(_rec("b", "rejected", reasons=("correctness.mismatch",)))
    with pytest.raises(ValueError, match="already in"):
        results.append(_rec("a"))
    with open(path, "a") as f:
        f.write('{"schema": 1, "id": "c", "outc')   # the kill came mid-write
    again = ResultsFile.open(path)
    assert sorted(again.done) == ["a", "b"] and again.done["b"].reasons == ["correctness.mismatch"]
    again.append(_rec("c"))
    lines = path.read_text().splitlines()
    assert [json.loads(x)["id"] for x in lines] == ["a", "b", "c"]


def test_a_corrupt_results_file_is_a_usage_error(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"id": "a"}\n')
    with pytest.raises(UsageError, match="r.jsonl:1: not a batch record"):
        ResultsFile.open(tmp_path / "r.jsonl")


def test_summary_fast_p_mean_reward_failures_and_mixed_hardware():
    s = BatchSummary((_rec("a", speedup=2.5, r_perf=1.0), _rec("b", speedup=1.2, r_perf=0.0, key="cpu-y-1t"),
                      _rec("c", "rejected", reasons=("tamper.side_stream",)),
                      _rec("d", "error", error_kind="infrastructure")), wall_s=60.0, ran=4)
    assert s.passed_gate == 0.5
    assert s.mean_r_perf == pytest.approx(1.0 / 3)     # a rejection earns 0; an error is left out
    assert [s.fast_p(p) for p in (0.0, 1.0, 1.5, 2.0)] == [0.5, 0.5, 0.25, 0.25]
    assert s.failures == {"tamper.side_stream": 1, "error.infrastructure": 1}
    assert s.mixed_hardware == {"t": ["cpu-x-1t", "cpu-y-1t"]}
    table = s.table()
    assert "fast_p       p=0: 50.0%  p=1: 50.0%  p=1.5: 25.0%  p=2: 25.0%" in table
    assert "t was scored on 2 hardware classes" in table and "4.0 rows/minute" in table


class FakeServer:
    """A row server whose answers are given: (record, "") or (None, why it gave none)."""

    def __init__(self, answers):
        self.answers, self.calls, self.kills = list(answers), 0, 0

    def score(self, row, timeout_s):
        self.calls += 1
        return self.answers.pop(0)

    def kill(self):
        self.kills += 1


def test_machine_failures_are_retried_in_a_fresh_scorer_and_candidate_failures_are_not():
    row = BatchRow("a", "t", "a.py")
    server = FakeServer([(None, "scorer process exited -9: Killed"), (_rec("a", "rejected", reasons=("x",)), "")])
    rec = runner.score_with_retries(server, row)
    assert (rec.outcome, rec.attempts, server.calls, server.kills) == ("rejected", 2, 2, 1)

    server = FakeServer([(_rec("a", "error", error_kind="infrastructure"), "")] * 3)   # e.g. no free device
    rec = runner.score_with_retries(server, row, retries=2)
    assert (rec.outcome, rec.error_kind, rec.attempts, server.calls) == ("error", "infrastructure", 3, 3)

    server = FakeServer([(None, "no record within 5 s")] * 3)
    rec = runner.score_with_retries(server, row, retries=2)
    assert (rec.error, rec.attempts, server.kills) == ("no record within 5 s", 3, 3)

    server = FakeServer([(_rec("a", "error", error_kind="usage"), "")])
    assert runner.score_with_retries(server, row).attempts == 1 and server.calls == 1


def test_a_row_whose_task_cannot_load_is_recorded_not_run(tmp_path):
    results = ResultsFile.open(tmp_path / "r.jsonl")
    runner.run_batch([BatchRow("x", str(tmp_path / "nope"), "c.py")], BatchOptions(), results)
    rec = results.done["x"]
    assert (rec.outcome, rec.error_kind, rec.attempts) == ("error", "usage", 0) and "no such task directory" in rec.error


def test_unknown_backend(tmp_path):
    with pytest.raises(UsageError, match="--backend must be one of local.ray"):
        runner.run_batch([], BatchOptions(), ResultsFile(tmp_path / "r.jsonl"), backend="slurm")


def test_a_resumed_batch_hands_only_the_rows_not_yet_in_the_file_to_its_backend(tmp_path, monkeypatch):
    """Asserted on what the backend is given, not on the results file refusing a duplicate."""
    tiny = str(Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task")
    results = ResultsFile.open(tmp_path / "r.jsonl")
    results.append(_rec("a", task=tiny))
    given = []
    monkeypatch.setattr(runner, "run_local", lambda todo, options, record, **kw: given.extend(r.id for r in todo))
    rows = [BatchRow(i, tiny, f"{i}.py") for i in ("a", "b", "c")]
    skipped = runner.run_batch(rows, BatchOptions(), results)
    assert given == ["b", "c"] and [r.id for r in skipped] == ["a"]
