"""`perfbench score PROBLEM_DIR submission.py` on a GPU MODE problem (#41), as a user runs it:
the tests gate with the problem's own check_implementation, each benchmark is timed AB-BA with
ref_kernel as the baseline, the verdict gives each speedup and their geometric mean.  The
problem (tests/fixtures/gpumode/axpb_py) is a CUDA one, run with --device cpu."""
import json
import math
from pathlib import Path

import pytest

from test_cli_golden import BENCHMARK_KEYS, SCORE_KEYS

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode"
PROBLEM = FIX / "axpb_py"
QUICK = ["--device", "cpu", "--processes", "1", "--pairs", "6", "--max-pairs", "6", "--timeout", "20"]


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_a_correct_submission_scores_each_benchmark_and_their_geometric_mean(run_cli):
    proc = run_cli("score", PROBLEM, PROBLEM / "solutions" / "correct" / "fused.py", *QUICK, "--s-ref", "1.2",
                   "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["verdict"] == "scored" and doc["comparison"] is None
    benches = doc["benchmarks"]
    assert set(doc) == SCORE_KEYS and all(set(b) == BENCHMARK_KEYS for b in benches)
    assert [b["name"] for b in benches] == ["benchmark0", "benchmark1"]
    assert [b["spec"]["size"] for b in benches] == [4096, 16384]
    assert all(b["ci"][0] <= b["speedup"] <= b["ci"][1] for b in benches)
    geomean = math.exp(sum(math.log(b["speedup"]) for b in benches) / 2)
    assert doc["speedup"] == pytest.approx(geomean) and doc["ci"][0] <= geomean <= doc["ci"][1]
    s = doc["speedup"]
    assert doc["r_perf"] == pytest.approx(0.0 if s <= 1.2 else min(1.0, math.log(s / 1.2) / math.log(1.2)))
    assert any("CUDA problem run on the CPU" in w for w in doc["warnings"])
    assert all(b["comparison"]["samples"]["iters_per_block"] >= 1 for b in benches)
    # each benchmark's own speed of light, at its own size: the larger moves more bytes
    assert benches[1]["sol"]["work"]["bytes"] > benches[0]["sol"]["work"]["bytes"] > 0 and doc["sol"] is None


@pytest.mark.parametrize("solution,code,needle", [
    ("solutions/wrong/untouched.py", "correctness.mismatch", "check_implementation: mismatch"),
    ("solutions/wrong/reads_reference.py", "correctness.mismatch", "check_implementation: mismatch"),
    # right for every gate call, then the work skipped: caught among the timed blocks, which GPU
    # MODE's own runner does not check: by a timed iteration's check, or by a contract block if
    # one is drawn first (it counts calls, and a contract block's are calls too)
    ("solutions/wrong/skips_after_gate.py", "correctness.mismatch|correctness.contract",
     "timed iteration|an untimed block among the timed ones"),
])
def test_a_wrong_submission_is_rejected_naming_why(run_cli, solution, code, needle):
    proc = run_cli("score", PROBLEM, PROBLEM / solution, *QUICK, "--json", "--quiet")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["reasons"]) == 1 and doc["reasons"][0]["code"] in code.split("|"), doc["reasons"]
    assert any(n in doc["reasons"][0]["message"] for n in needle.split("|")), doc["reasons"]


def test_a_submission_without_custom_kernel_says_so(run_cli, write):
    cand = write("nothing.py", """
        from task import input_t   # the problem's own imports resolve in the sandbox

        def kernel(data):
            return data[1]
    """)
    proc = run_cli("score", PROBLEM, cand, *QUICK, "--json", "--quiet")
    assert proc.returncode == 1, proc.stderr
    reason = json.loads(proc.stdout)["reasons"][0]
    assert reason["code"] == "candidate.missing_entry_point" and "custom_kernel" in reason["message"]


def test_usage_errors_are_one_line(run_cli, tmp_path):
    empty = tmp_path / "not_a_problem"
    empty.mkdir()
    for args, needle in (([empty, PROBLEM / "submission.py"], "not a perfbench task"),
                         ([PROBLEM, PROBLEM / "submission.py", "--set", "sise=4"], "generate_input takes no 'sise'")):
        proc = run_cli("score", *args, "--device", "cpu")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and needle in proc.stderr, proc.stderr


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_tasks_list_and_score_batch_take_problems(run_cli, tmp_path):
    listed = run_cli("tasks", "list", FIX)
    assert listed.returncode == 0 and "axpb_py" in listed.stdout and "gpu-mode" in listed.stdout
    manifest = tmp_path / "rows.csv"
    manifest.write_text(f"task,candidate,id\n{PROBLEM},{PROBLEM / 'submission.py'},mine\n")
    out = tmp_path / "records.jsonl"
    proc = run_cli("score-batch", manifest, "--out", out, "--device", "cpu", "--processes", "1", "--pairs", "6",
                   "--max-pairs", "6", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text().splitlines()[0])
    assert record["outcome"] == "scored" and len(record["result"]["benchmarks"]) == 2
