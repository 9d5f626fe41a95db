"""Golden CLI tests (#40): each command's JSON keys and exit codes, pinned, so that moving code
between modules cannot change what a user's script reads.  The convention they hold: `--json`
prints the document on stdout, `--out PATH` writes the same document to a file, and the exit
status says the outcome (0 scored / all verdicts in, 1 rejected, 2 the user's mistake or an
errored batch row).  A key added is a deliberate change: add it here too."""
import json
from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TASK = FIX / "tiny_task"
FAST = ["--pairs", "6", "--max-pairs", "6", "--timeout", "20", "--processes", "1"]

SCORE_KEYS = {"candidate", "checks", "ci", "clock_control", "comparison", "device", "isolation", "overrides",
              "p_value", "perfbench_version", "r_impl", "r_perf", "reasons", "reward", "s_ref", "s_ref_source",
              "live_s_ref", "benchmarks", "deadline_s", "contract", "sol",
              "schema_version", "seed", "speedup", "task", "task_kind", "tests_passed", "tests_total", "threading",
              "verdict", "warnings", "worker_logs"}
# GPU MODE problems: one comparison per benchmark (tests/integration/test_gpumode_cli.py)
BENCHMARK_KEYS = {"name", "spec", "speedup", "ci", "comparison", "sol"}
COMPARISON_KEYS = {"baseline", "candidate", "config", "device", "extra", "fingerprint", "perfbench_version", "samples",
                   "schema_version", "seed", "summary", "timer", "solution"}
# The default s_ref here is live (tiny_task has no bench_configs entry): the solution's pairs
LIVE_KEYS = {"solution_speedup", "solution_ci", "candidate_over_solution", "ratio_ci"}
SOLUTION_SUMMARY_KEYS = {"speedup", "ci_low", "ci_high", "period_effect", "solution_median_ns",
                         "candidate_over_solution", "ratio_ci"}
SUMMARY_KEYS = {"baseline_median_ns", "by_position_median_ns", "candidate_median_ns", "ci_high", "ci_low",
                "confidence", "hodges_lehmann", "n_pairs", "outlier_pairs", "p_value", "period_effect", "speedup",
                "stability", "warnings"}
SAMPLES_KEYS = {"baseline_first", "baseline_ns", "candidate_ns", "conditions", "discarded_throttled",
                "iters_per_block", "processes", "stop_reason"}
ISOLATION_KEYS = {"caps_dropped", "cgroup", "cpuset", "details", "ipc_ns", "minimal_root", "missing", "mount_ns",
                  "net_ns", "no_keyrings", "no_new_privs", "no_userfaultfd", "pid_ns", "private_tmpfs", "readonly_fs",
                  "scorer_nondumpable", "startup_ms", "uid", "worker_uid", "zygote_source", "zygote_startup_ms"}
# The speed-of-light section (docs/speed_of_light.md)
SOL_KEYS = {"work", "peaks", "t_sol_ns", "bound", "headroom", "baseline", "candidate", "solution"}
SOL_SIDE_KEYS = {"median_ns", "fraction_of_sol", "fraction_ci"}
BATCH_KEYS = {"failures", "fast_p", "mean_r_perf", "mixed_hardware", "outcomes", "passed_gate", "ran", "rows",
              "rows_per_minute", "wall_s"}


def test_score_json_keys_and_exit_codes(run_cli, tmp_path):
    out = tmp_path / "v.json"
    scored = run_cli("score", TASK, FIX / "candidates" / "honest_fast.py", "--json", "--out", out, *FAST)
    assert scored.returncode == 0, scored.stderr
    doc = json.loads(scored.stdout)
    assert doc == json.loads(out.read_text())
    assert set(doc) == SCORE_KEYS and set(doc["comparison"]) == COMPARISON_KEYS
    assert set(doc["comparison"]["summary"]) == SUMMARY_KEYS and set(doc["comparison"]["samples"]) == SAMPLES_KEYS
    assert set(doc["isolation"]) == ISOLATION_KEYS and doc["verdict"] == "scored" and doc["schema_version"] == 4
    assert set(doc["live_s_ref"]) == LIVE_KEYS and doc["s_ref_source"] == "live" and doc["benchmarks"] == [] and doc["deadline_s"] == 480.0
    assert set(doc["comparison"]["solution"]) == {"samples", "summary"}
    assert set(doc["comparison"]["solution"]["samples"]) == SAMPLES_KEYS
    assert set(doc["comparison"]["solution"]["summary"]) == SOLUTION_SUMMARY_KEYS
    assert set(doc["sol"]) == SOL_KEYS and set(doc["sol"]["candidate"]) == SOL_SIDE_KEYS | {"sol_score", "sol_score_ci"}
    assert set(doc["sol"]["baseline"]) == set(doc["sol"]["solution"]) == SOL_SIDE_KEYS
    rejected = run_cli("score", TASK, FIX / "candidates" / "wrong_values.py", "--json", *FAST)
    assert rejected.returncode == 1
    doc = json.loads(rejected.stdout)
    assert set(doc) == SCORE_KEYS and doc["comparison"] is None and doc["reward"] == 0.0
    assert doc["reasons"][0]["code"] == "correctness.mismatch" and set(doc["reasons"][0]) == {"code", "message"}
    usage = run_cli("score", TASK, tmp_path / "missing.py")
    assert usage.returncode == 2 and usage.stdout == "" and len(usage.stderr.strip().splitlines()) == 1


def test_compare_json_is_the_comparison(run_cli, write):
    write("a.py", "from perfbench.testing.timers import FakeKernel\nkernel = FakeKernel('A', 2e6)\n"
                  "def make_inputs(seed):\n    return ()\n")
    write("b.py", "from perfbench.testing.timers import FakeKernel\nkernel = FakeKernel('B', 1e6)\n")
    proc = run_cli("compare", "a.py", "b.py", "--fake-timer", "--seed", "1", "--min-pairs", "8", "--max-pairs", "8",
                   "--quiet", "--json", "--out", "r.json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == COMPARISON_KEYS and set(doc["summary"]) == SUMMARY_KEYS and set(doc["samples"]) == SAMPLES_KEYS
    s = doc["summary"]
    assert (s["speedup"], s["ci_low"], s["ci_high"], s["p_value"]) == (2.0, 2.0, 2.0, 0.0078125)


def test_env_json_keys(run_cli):
    proc = run_cli("env", "--json")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == {"device", "gpu", "host", "openmp", "problems", "verdict"}


def test_score_batch_exit_codes_and_json(run_cli, tmp_path):
    """All rows with a verdict (a rejection included): 0.  A row whose task does not exist has
    none: 2, and stderr names it (#40: it exited 0)."""
    manifest = tmp_path / "rows.jsonl"
    manifest.write_text(json.dumps({"task": str(TASK), "candidate": str(FIX / "candidates" / "raises.py"),
                                    "id": "raises"}) + "\n")
    proc = run_cli("score-batch", manifest, "--out", tmp_path / "r.jsonl", "--processes", "1", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == BATCH_KEYS
    with manifest.open("a") as f:
        f.write(json.dumps({"task": str(tmp_path / "no_such_task"), "candidate": str(FIX / "candidates" / "raises.py"),
                            "id": "lost"}) + "\n")
    proc = run_cli("score-batch", manifest, "--out", tmp_path / "r.jsonl", "--processes", "1", "--json", "--quiet")
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    summary = json.loads(proc.stdout)
    assert summary["rows"] == 2 and summary["outcomes"] == {"rejected": 1, "error": 1}
    assert "1 of 2 rows errored, without a verdict: lost (usage)" in proc.stderr


def test_scorch_compare_json_on_stdout_and_out(run_cli, tmp_path):
    out = tmp_path / "s.json"
    proc = run_cli("scorch", "compare", "--ops", "spmv", "--shape", "64,64", "--variants", "torch-sparse",
                   "--budget", "0.2", "--quiet", "--json", "--out", out)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc == json.loads(out.read_text())
    assert set(doc) == {"results", "schema", "threads"} and set(doc["results"][0]) == {"baseline", "case", "label",
                                                                                     "variants"}


def test_tasks_list_and_version(run_cli):
    proc = run_cli("tasks", "list")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["task", "kind", "device", "family", "timed", "s_ref", "here"]
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.split()[-1] == __import__("perfbench").__version__


def test_a_baseline_slower_than_at_calibration_is_said(run_cli, tmp_path):
    """#38: an entry for this very host key whose calibration saw the baseline take 1 us a call
    (tiny_task's takes far longer): the score uses its s_ref and warns `baseline_drift`."""
    from perfbench.device.fingerprint import fingerprint
    from perfbench.pipeline.calibrate import Calibration
    from perfbench.task import bench_configs
    from perfbench.task.spec import load_task

    key = bench_configs.device_key("cpu", fingerprint("cpu"), load_task(TASK).threads)
    bench_configs.write(key, [Calibration("tiny_axpy", 1.5, 1.4, 1.6, 30, (1.5,) * 3, baseline_ns=(1e3,) * 3)],
                        tmp_path / "configs")
    proc = run_cli("score", TASK, FIX / "candidates" / "honest_fast.py", "--json", *FAST,
                   env={"PERFBENCH_BENCH_CONFIGS": str(tmp_path / "configs")})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["s_ref_source"] == f"bench_configs/{key}.toml"
    [said] = [w for w in doc["warnings"] if w.startswith("baseline_drift")]
    assert "it took 0.001-0.001 ms" in said and "run `perfbench calibrate` here" in said, said
