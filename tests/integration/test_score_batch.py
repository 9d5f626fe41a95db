"""`perfbench score-batch` end to end: rows in fresh scorer processes, resumable, local and Ray."""
import json
import shutil
from pathlib import Path

import pytest

from perfbench.batch import BatchOptions, score_many

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TASK = FIX / "tiny_task"
# Rejected in the gate: no timing, so a row costs only its processes' start-up.
QUICK = ("raises.py", "wrong_values.py")


def test_batch_resumes_without_scoring_a_row_twice(run_cli, tmp_path):
    cands = tmp_path / "cands"
    cands.mkdir()
    for name in QUICK:
        shutil.copy(FIX / "candidates" / name, cands / name)
    out = tmp_path / "results.jsonl"
    proc = run_cli("score-batch", cands, "--task", TASK, "--out", out, "--processes", "1")
    assert proc.returncode == 0, proc.stderr
    assert "2 rows, 0 already in" in proc.stderr and "[2/2]" in proc.stderr
    assert "rows         2: 0 scored, 2 rejected, 0 errors" in proc.stdout
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["id"]: r["reasons"] for r in records} == {"raises.py": ["candidate.raised"],
                                                         "wrong_values.py": ["correctness.mismatch"]}
    shutil.copy(FIX / "candidates" / "exits.py", cands / "exits.py")   # a row added since
    proc = run_cli("score-batch", cands, "--task", TASK, "--out", out, "--processes", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "3 rows, 2 already in" in proc.stderr and "[1/1] exits.py" in proc.stderr
    ids = [json.loads(x)["id"] for x in out.read_text().splitlines()]   # in the order rows finished
    assert sorted(ids[:2]) == ["raises.py", "wrong_values.py"] and ids[2:] == ["exits.py"]
    summary = json.loads(proc.stdout)
    assert summary["rows"] == 3 and summary["ran"] == 1 and summary["outcomes"] == {"rejected": 3}


def test_batch_usage_error_is_one_line(run_cli, tmp_path):
    proc = run_cli("score-batch", tmp_path / "none.jsonl")
    assert proc.returncode == 2 and proc.stderr.strip().endswith("none.jsonl: no such manifest")


def test_score_many_on_a_local_ray_instance(tmp_path):
    pytest.importorskip("ray")
    recs = score_many([(TASK, FIX / "candidates" / "raises.py")], BatchOptions(processes=1), backend="ray",
                      out=tmp_path / "r.jsonl")
    assert [(r.outcome, r.reasons, r.attempts) for r in recs] == [("rejected", ["candidate.raised"], 1)]
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 1
