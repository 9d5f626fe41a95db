"""`perfbench score` as a user runs it: exit codes, one-line errors, JSON, nothing half-written."""
import json
import math
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TASK = FIX / "tiny_task"
KB = FIX / "kernelbench"
# One worker process and s_ref from the task where the test is about something else;
# test_scored_json_and_out runs the defaults (3 processes; s_ref live: tiny_task has no
# bench_configs entry).
PAIRS = ["--pairs", "6", "--max-pairs", "6", "--timeout", "20"]
FAST = [*PAIRS, "--s-ref", "table", "--processes", "1"]
KB_SMALL = ["--device", "cpu", "--set", "batch_size=32", "--set", "in_features=64", "--set", "out_features=48"]


def _one_line(proc, code, needle):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_scored_json_and_out(run_cli, tmp_path):
    out = tmp_path / "verdict.json"
    proc = run_cli("score", TASK, FIX / "candidates" / "honest_fast.py", "--json", "--out", out, *PAIRS)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads(out.read_text())
    stopping = doc["comparison"]["extra"]["stopping"]
    assert doc["comparison"]["config"]["processes"] == 3 and stopping["processes"] == 3
    # No s_ref to decide on before the run (it is measured live): every process measures, unless
    # the speedup's CI reached its target after the second.
    assert set(doc["comparison"]["samples"]["processes"]) == set(range(stopping["processes_run"]))
    assert stopping["s_ref"] is None and stopping["decision"] in (None, "ci_target")
    assert stopping["target_rel_ci"] == 0.03   # --ci-target's default
    assert doc["verdict"] == "scored" and doc["reasons"] == []
    # s_ref live: the solution's pairs, in every second round (half the candidate's), interleaved with them
    solution = doc["comparison"]["solution"]
    assert doc["s_ref_source"] == "live" and doc["s_ref"] == pytest.approx(solution["summary"]["speedup"])
    assert 2 * len(solution["samples"]["baseline_ns"]) == len(doc["comparison"]["samples"]["baseline_ns"]) >= 12
    live = doc["live_s_ref"]
    assert live["solution_speedup"] == doc["s_ref"]
    assert live["candidate_over_solution"] == pytest.approx(doc["speedup"] / doc["s_ref"])
    assert live["ratio_ci"][0] <= live["candidate_over_solution"] <= live["ratio_ci"][1]
    s, s_ref = doc["speedup"], doc["s_ref"]
    if s_ref <= 1:
        assert doc["r_perf"] is None
    else:
        assert doc["r_perf"] == pytest.approx(0.0 if s <= s_ref else min(1.0, math.log(s / s_ref) / math.log(s_ref)))
    # CPU timing locks no clock, and the verdict says why
    assert doc["clock_control"]["status"] == "not_applicable"
    assert "CPU timing" in doc["clock_control"]["reason"]


def test_s_ref_table_takes_the_task_default_and_says_so(run_cli, tmp_path):
    proc = run_cli("score", TASK, FIX / "candidates" / "honest_fast.py", "--json", "--quiet", *FAST,
                   "--plot", tmp_path / "roofline.png")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "roofline.png").read_bytes()[:4] == b"\x89PNG"   # the speed of light, drawn
    doc = json.loads(proc.stdout)
    assert doc["s_ref"] == 1.5 and doc["s_ref_source"] == "task default" and doc["live_s_ref"] is None
    assert doc["comparison"]["solution"] is None
    assert any("no bench_configs entry" in w for w in doc["warnings"])


@pytest.mark.parametrize("args,needle", [
    (["--s-ref", "fast"], "--s-ref: expected a number > 1 or one of auto|live|table"),
    (["--s-ref", "0.5"], "s_ref must be > 1"),
    (["--ci-target", "2"], "ci_target must be in [0, 1), got 2.0")])
def test_a_bad_s_ref_or_ci_target_is_one_line(run_cli, args, needle):
    _one_line(run_cli("score", TASK, FIX / "candidates" / "honest_fast.py", *args), 2, needle)


def test_live_s_ref_on_a_kernelbench_problem_is_one_line(run_cli):
    proc = run_cli("score", KB / "19_ReLU_matmul.py", KB / "model_new_fused.py", *KB_SMALL, "--s-ref", "live")
    _one_line(proc, 2, "--s-ref live times the task's solution.py")


def test_rejected_exit_1_with_reason(run_cli, tmp_path):
    out = tmp_path / "v.json"
    proc = run_cli("score", TASK, FIX / "candidates" / "wrong_values.py", "--out", out, *FAST)
    assert proc.returncode == 1
    assert "correctness.mismatch" in proc.stdout and "REJECTED" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["verdict"] == "rejected" and doc["reward"] == 0.0 and doc["comparison"] is None


def test_candidate_prints_cannot_forge_the_verdict(run_cli, write):
    cand = write("forger.py", """
        import sys
        print('{"verdict": "scored", "reward": 1.0}')
        sys.stdout.flush()

        def kernel(x, y):
            return 2 * x + y + 1
    """)
    proc = run_cli("score", TASK, cand, "--json", "--quiet", *FAST)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)  # stdout is exactly one JSON document: the scorer's
    assert doc["verdict"] == "rejected"
    assert '"reward": 1.0' in doc["worker_logs"]["candidate"]


@pytest.mark.parametrize("setup,code,needle", [
    ("missing_toml", 2, "not a perfbench task (no task.toml), a GPU MODE problem (no task.yml) nor a SOL-ExecBench problem (no definition.json)"),
    ("bad_toml", 2, "task.toml: invalid TOML"),
    ("bad_kind", 2, "kind must be one of perf|impl, got 'fast'"),
    ("no_task", 2, "no such task directory"),
    ("no_candidate", 2, "nope.py: no such file"),
    ("bad_device", 2, "--device must be cpu or cuda"),
    ("cuda_missing", 2, "no CUDA device"),
    ("bad_set", 2, "has no module-level constant 'batchsize'"),
])
def test_usage_errors(run_cli, tmp_path, setup, code, needle):
    task = tmp_path / "task"
    task.mkdir()
    cand = FIX / "candidates" / "honest_fast.py"
    extra = []
    if setup == "missing_toml":
        pass
    elif setup == "bad_toml":
        (task / "task.toml").write_text("name = [unclosed\n")
    elif setup == "bad_kind":
        (task / "task.toml").write_text('kind = "fast"\ndevice = "cpu"\n')
    elif setup == "no_task":
        task = tmp_path / "nothing"
    elif setup == "no_candidate":
        task, cand = TASK, tmp_path / "nope.py"
    elif setup == "bad_device":
        task, extra = TASK, ["--device", "tpu"]
    elif setup == "cuda_missing":
        import torch
        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
        task, extra = TASK, ["--device", "cuda"]
    elif setup == "bad_set":
        task, cand, extra = KB / "19_ReLU_matmul.py", KB / "model_new_fused.py", ["--set", "batchsize=4"]
    out = tmp_path / "never.json"
    proc = run_cli("score", task, cand, "--out", out, *extra, *FAST)
    _one_line(proc, code, needle)
    assert not out.exists()  # nothing written half-way


# Two that leave a Python traceback in the candidate's worker, which must not reach the CLI's
# stderr; every other reason code is asserted in process by tests/integration/test_score_gate.py.
@pytest.mark.parametrize("name,reason", [("syntax_error", "candidate.syntax"), ("raises", "candidate.raised")])
def test_candidate_errors_are_named_rejections(run_cli, name, reason):
    proc = run_cli("score", TASK, FIX / "candidates" / f"{name}.py", "--json", "--quiet", *FAST)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert [r["code"] for r in json.loads(proc.stdout)["reasons"]] == [reason]


def test_hang_times_out(run_cli):
    proc = run_cli("score", TASK, FIX / "candidates" / "hangs.py", "--json", "--quiet", "--timeout", "2")
    assert proc.returncode == 1
    assert [r["code"] for r in json.loads(proc.stdout)["reasons"]] == ["candidate.timeout"]


def test_kernelbench_problem_scored_end_to_end(run_cli):
    # No --s-ref and no bench_configs entry: KernelBench's own answer (the speedup), R_perf null.
    proc = run_cli("score", KB / "19_ReLU_matmul.py", KB / "model_new_fused.py", *KB_SMALL, "--json", "--quiet", *FAST)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["verdict"] == "scored" and doc["r_perf"] is None and doc["reward"] is None and doc["s_ref"] is None
    assert any("R_perf is null" in w and "--s-ref" in w for w in doc["warnings"])
    assert doc["overrides"] == {"batch_size": 32, "in_features": 64, "out_features": 48}
    # Real timing of the same matmul: s is near 1, but no band around 1 is safe to assert on a
    # shared CI host (an A/A compare read 0.42 there, 2026-12-03).  The answer must carry its CI.
    assert doc["speedup"] > 0 and doc["ci"][0] <= doc["speedup"] <= doc["ci"][1]


def test_kernelbench_wrong_model_rejected(run_cli):
    proc = run_cli("score", KB / "19_ReLU_matmul.py", KB / "model_new_wrong.py", *KB_SMALL, "--s-ref", "1.2",
                   "--json", "--quiet", *FAST)
    assert proc.returncode == 1
    assert [r["code"] for r in json.loads(proc.stdout)["reasons"]] == ["correctness.mismatch"]


def test_env_without_driver(run_cli):
    proc = run_cli("env", "--device", "cuda")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert "unlocked" in proc.stdout or "no CUDA device" in proc.stdout
    proc = run_cli("env", "--json")
    assert proc.returncode == 0 and "verdict" in json.loads(proc.stdout)


def test_selfcheck_cuda_without_gpu_fails_cleanly(run_cli):
    import torch
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    proc = run_cli("selfcheck", "--device", "cuda", "--quick")
    _one_line(proc, 2, "no CUDA device")


def test_a_score_leaves_nothing_in_tmp(tmp_path):
    """Thousands of scores must not leave thousands of worker directories (they did: one log
    directory per worker, never removed)."""
    import os
    import subprocess
    import sys
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    import getpass
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]), TMPDIR=str(tmp))
    # torch's own per-user compiler cache, made when the speed of light's FlopCounterMode imports
    # torch._dynamo, and reused by every later process: not a score's leftover.  (Unset here: an
    # earlier test in this process may have set it, and the directory would be made elsewhere.)
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "perfbench.cli.main", "score", str(TASK),
                           str(FIX / "candidates" / "honest_fast.py"), "--quiet", *FAST],
                          capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp.iterdir()) == [f"torchinductor_{getpass.getuser()}"]


def test_sigterm_closes_the_workers_like_ctrl_c(tmp_path):
    """A batch system's timeout sends SIGTERM: the scorer unwinds and closes its workers
    (before, they were left running, frozen ones forever) and exits 143."""
    import os
    import signal
    import subprocess
    import sys
    import time
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]), TMPDIR=str(tmp))
    proc = subprocess.Popen([sys.executable, "-m", "perfbench.cli.main", "score", str(TASK),
                             str(FIX / "candidates" / "honest_fast.py"), "--quiet", "--pairs", "60", "--max-pairs", "60",
                             "--budget", "60", "--processes", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    deadline = time.monotonic() + 120
    while len(list(tmp.glob("perfbench-worker-*"))) < 2 and time.monotonic() < deadline:   # both workers started
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert sorted(p.name for p in tmp.iterdir()) == []


def test_a_candidates_files_are_bounded_and_the_scorer_reads_only_its_logs_tail(run_cli, write):
    """Output flooding: a candidate printing in a loop wrote its log to the host's disk without
    bound, and the scorer read the whole log into memory for its tail (1.5 GB printed: scorer
    RSS 2.1 GB).  Writes past MAX_FILE_BYTES now fail in the candidate."""
    from perfbench.isolation.sandbox.hardening import MAX_FILE_BYTES
    cand = write("bounded.py", f"""
        import resource
        import torch

        soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
        if not 0 < soft <= {MAX_FILE_BYTES}:
            raise SystemExit(f"unbounded: {{soft}}")

        def kernel(x, y):
            return torch.add(y, x, alpha=2)
        """)
    proc = run_cli("score", TASK, cand, "--quiet", *FAST)
    assert proc.returncode == 0, proc.stdout + proc.stderr


