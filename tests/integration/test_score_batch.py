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


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
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


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_a_kept_baseline_serves_the_next_candidate_of_its_task():
    """score-batch's row servers keep the baseline's workers between rows of one task: the
    second row starts no baseline interpreter (and reuses the baseline's time alone).  Three per
    task: one per timed process, and the untimed process's."""
    from perfbench.pipeline.baseline_pool import BaselinePool
    from perfbench.pipeline.score import ScoreConfig, score
    from perfbench.timing.sampler import SamplerConfig

    pool = BaselinePool()
    cfg = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=6), processes=2, call_timeout_s=20)
    try:
        first = score(TASK, FIX / "candidates" / "honest_fast.py", cfg, baselines=pool)
        assert first.verdict == "scored" and pool.started == 3
        alone = pool.alone_ns
        second = score(TASK, FIX / "candidates" / "wrong_values.py", cfg, baselines=pool)
        assert [r.code for r in second.reasons] == ["correctness.mismatch"]
        third = score(TASK, FIX / "candidates" / "honest_slow.py", cfg, baselines=pool)
        assert third.verdict == "scored" and third.reasons == ()
        assert pool.started == 3 and pool.alone_ns is alone
        assert third.comparison.extra["baseline_alone_ns"] == alone
    finally:
        pool.close()


FORGER = '''
import json, os, sys
forged = {"schema": 1, "id": "forger.py", "task": "t", "candidate": "forger.py", "outcome": "scored",
          "attempts": 1, "wall_s": 0.1, "error_kind": None, "error": "", "device_key": "x",
          "result": {"speedup": 100.0, "r_perf": 1.0, "reasons": []}}
line = "perfbench-record " + json.dumps(forged) + "\\n"
for stream in (sys.stdout, sys.stderr):
    stream.write(line); stream.flush()
for fd in range(3, 64) if os.environ.get("FORGE_FDS") else ():   # and into anything else it holds
    try:
        os.write(fd, line.encode())
    except OSError:
        pass

def kernel(x, y):
    print(line, flush=True)
    return x + y                 # wrong: the task is 2*x + y
'''


@pytest.mark.parametrize("into_fds,reason", [(False, "correctness.mismatch"), (True, "tamper.protocol")])
def test_a_candidate_cannot_forge_its_batch_record(run_cli, tmp_path, monkeypatch, into_fds, reason):
    """The row server's records travel on the scorer's stdout; a candidate's output goes to its
    worker's log and any fd it holds is its own socket or log, never that stdout: its forged
    'scored, R_perf 1' line is not what the batch records.  (Writing into its socket breaks the
    worker protocol: caught there, before the gate.)"""
    if into_fds:
        monkeypatch.setenv("FORGE_FDS", "1")
    cands = tmp_path / "cands"
    cands.mkdir()
    (cands / "forger.py").write_text(FORGER)
    out = tmp_path / "r.jsonl"
    proc = run_cli("score-batch", cands, "--task", TASK, "--out", out, "--processes", "1")
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["id"], r["outcome"], r["reasons"]) for r in records] == [("forger.py", "rejected", [reason])]
    assert records[0]["result"]["r_perf"] == 0.0 and records[0]["result"]["task"] == "tiny_axpy"


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_a_candidate_past_the_scores_deadline_is_its_verdict_not_a_retry(run_cli, tmp_path):
    """#58 (3): every call of slow_every_call stays under the call timeout, so only the deadline
    ends it: rejected `candidate.timeout`, saying what had run, after one attempt (an
    infrastructure error would be retried twice), and well before its gate's ~40 s of calls."""
    manifest = tmp_path / "rows.jsonl"
    manifest.write_text(json.dumps({"task": str(TASK), "candidate": str(FIX / "candidates" / "slow_every_call.py")}) + "\n")
    out = tmp_path / "results.jsonl"
    proc = run_cli("score-batch", manifest, "--out", out, "--processes", "1", "--deadline", "12")
    assert proc.returncode == 0, proc.stderr
    (record,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert (record["outcome"], record["attempts"]) == ("rejected", 1)
    (reason,) = record["result"]["reasons"]
    assert reason["code"] == "candidate.timeout"
    assert reason["message"].startswith("the score's deadline (12 s, --deadline) passed during candidate's '")
    assert "by then the gate had not finished, 0 of 1 timed processes had run" in reason["message"]
    assert record["result"]["deadline_s"] == 12.0
    assert record["wall_s"] < 12 + 20   # the deadline, and the scorer's start and end around it
