"""`perfbench score PROBLEM_DIR solution.json` on SOL-ExecBench problems (#62), as a user runs
it on a CPU: each workload timed AB-BA against the definition's reference, their geometric
mean, the problem's tolerance as the judge; a wrong solution and an untouched destination-
passing output rejected with their reasons; a compiled language refused in one line."""
import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_cli_golden import BENCHMARK_KEYS, SCORE_KEYS

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "sol_execbench"
PROBLEM = FIX / "own" / "axpy_head"
UPSTREAM = FIX / "upstream"
QUICK = ["--device", "cpu", "--processes", "1", "--pairs", "6", "--max-pairs", "6", "--timeout", "20"]


@pytest.mark.slow   # (> 10 s in CI)
def test_a_destination_passing_solution_scores_each_workload_and_their_geometric_mean(run_cli):
    proc = run_cli("score", PROBLEM, PROBLEM / "solution_dps.json", *QUICK, "--set", "cols=32", "--json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["verdict"] == "scored" and doc["candidate"] == str(PROBLEM / "solution_dps.json")
    benches = doc["benchmarks"]
    assert set(doc) == SCORE_KEYS and all(set(b) == BENCHMARK_KEYS for b in benches)
    assert [(b["name"], b["spec"]) for b in benches] == [("workload0", {"uuid": "axpy-3", "rows": 3}),
                                                          ("workload1", {"uuid": "axpy-40", "rows": 40})]
    assert all(b["ci"][0] <= b["speedup"] <= b["ci"][1] for b in benches)
    geomean = math.exp(sum(math.log(b["speedup"]) for b in benches) / 2)
    assert doc["speedup"] == pytest.approx(geomean) and doc["r_perf"] is None
    assert any("cols=32 (defined 64)" in w for w in doc["warnings"])
    assert doc["overrides"] == {"cols": "32"}
    # each workload's speed of light at its own shapes, the DPS outputs counted once:
    # rows x 32 x (4 + 2 + 4) bytes of x, y and out, rows x 16 x 2 of head
    assert [b["sol"]["work"]["bytes"] for b in benches] == [3 * 32 * 10 + 3 * 16 * 2, 40 * 32 * 10 + 40 * 16 * 2]


@pytest.mark.parametrize("solution,code,needle", [
    ("solution_wrong.json", 1, "of 96 values outside atol=0.001 rtol=0.001: "),   # (x near 0: within, by chance)
    ("solution_untouched.json", 1, "output still holds the poison written before the call"),
])
def test_a_wrong_solution_and_an_untouched_output_are_rejected(run_cli, solution, code, needle):
    proc = run_cli("score", PROBLEM, PROBLEM / solution, *QUICK, "--quiet")
    assert proc.returncode == code, proc.stderr
    reason = next(line for line in proc.stdout.splitlines() if line.startswith("reason"))
    assert needle in reason and "verdict    REJECTED" in proc.stdout
    assert reason.startswith(f"reason     {'correctness.mismatch' if 'wrong' in solution else 'correctness.uninitialised'}"
                             ": size 'workload0': output head: ")


def test_a_cuda_cpp_solution_is_unsupported_in_one_line(run_cli):
    problem = UPSTREAM / "cuda_cpp" / "rmsnorm"
    proc = run_cli("score", problem, problem / "solution_cuda.json", "--device", "cpu")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"perfbench: error: candidate.unsupported: {problem / 'solution_cuda.json'}: a cuda_cpp solution needs "
        "SOL-ExecBench's own build driver; perfbench runs pytorch and triton solutions (docs/tasks.md)"]


@pytest.mark.parametrize("args,needle", [
    ([PROBLEM, PROBLEM / "kernel.py", "--entry-point", "kernel.py::nowhere"],
     "candidate.missing_entry_point"),
    ([PROBLEM, PROBLEM / "nothing.json"], "nothing.json: no such file"),
    ([FIX / "own", PROBLEM / "kernel.py"], "not a perfbench task (no task.toml)"),
])
def test_usage_errors(run_cli, args, needle):
    proc = run_cli("score", *args, *QUICK, "--quiet")
    assert needle in proc.stdout + proc.stderr and proc.returncode in (1, 2), proc.stderr


def test_tasks_list_finds_problems_a_folder_down(run_cli):
    proc = run_cli("tasks", "list", UPSTREAM)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[:5] for line in proc.stdout.splitlines()[1:]]
    assert rows == [["cuda_cpp/rmsnorm", "perf", "cuda", "sol-execbench", "14"],
                    ["pytorch/gemma3_swiglu", "perf", "cuda", "sol-execbench", "3"],
                    ["pytorch/linear_backward", "perf", "cuda", "sol-execbench", "3"],
                    ["triton/rmsnorm", "perf", "cuda", "sol-execbench", "14"]]


def test_upstream_triton_rmsnorm_passes_under_the_interpreter():
    """upstream's destination-passing Triton solution, on Triton's interpreter (set before triton
    loads, as a score on the CPU sets it): every call of two workloads within tolerance."""
    pytest.importorskip("triton")
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / 'unit')!r})
        from pathlib import Path
        import tempfile
        from test_solexec import bound, call
        from perfbench.task.program import TaskProgram
        spec, sol = bound(Path(tempfile.mkdtemp()), "solution_triton.json", Path({str(UPSTREAM / 'triton' / 'rmsnorm')!r}),
                          {{"workloads": "0,1"}})
        program = TaskProgram(spec, "cpu")
        fn = program.load_callable(sol.file, untrusted=True)
        for size in spec.sizes:
            x = program.make_inputs(3, size)
            print(size, program.judge(x, *call(program, fn, x), size=size))
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TRITON_INTERPRET="1"))
    assert proc.returncode == 0 and proc.stdout.split("\n")[:2] == ["workload0 []", "workload1 []"], proc.stderr[-2000:]
