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


def test_a_kept_baseline_serves_the_next_candidate_of_its_task():
    """score-batch's row servers keep the baseline's workers between rows of one task: the
    second row starts no baseline interpreter (and reuses the baseline's time alone)."""
    from perfbench.pipeline.baseline_pool import BaselinePool
    from perfbench.pipeline.score import ScoreConfig, score
    from perfbench.timing.sampler import SamplerConfig

    pool = BaselinePool()
    cfg = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=6), processes=2, call_timeout_s=20)
    try:
        first = score(TASK, FIX / "candidates" / "honest_fast.py", cfg, baselines=pool)
        assert first.verdict == "scored" and pool.started == 2
        alone = pool.alone_ns
        second = score(TASK, FIX / "candidates" / "wrong_values.py", cfg, baselines=pool)
        assert [r.code for r in second.reasons] == ["correctness.mismatch"]
        third = score(TASK, FIX / "candidates" / "honest_slow.py", cfg, baselines=pool)
        assert third.verdict == "scored" and third.comparison.speedup < 1
        assert pool.started == 2 and pool.alone_ns is alone
        assert third.comparison.extra["baseline_alone_ns"] == alone
    finally:
        pool.close()
