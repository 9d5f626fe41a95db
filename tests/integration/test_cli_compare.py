import json

import pytest

from perfbench.core.stats import median_speedup

GOOD = """
    import torch

    def make_inputs(seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(64, 64, generator=g),)

    def kernel(x):
        return torch.softmax(x, dim=1)
"""
QUICK = ["--min-pairs", "6", "--max-pairs", "6", "--quiet"]


def _one_line_error(proc, code, *needles):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


def test_exact_output_with_fake_timer(run_cli, write):
    write("a.py", "from perfbench.testing.timers import FakeKernel\nkernel = FakeKernel('A', 2e6)\n"
                  "def make_inputs(seed):\n    return ()\n")
    write("b.py", "from perfbench.testing.timers import FakeKernel\nkernel = FakeKernel('B', 1e6)\n")
    proc = run_cli("compare", "a.py", "b.py", "--fake-timer", "--seed", "1", "--min-pairs", "8",
                   "--max-pairs", "8", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "b.py:kernel is 2.00 ± 0.00 times faster than a.py:kernel (p=0.0078)"
    assert "2.000 ms / call" in proc.stdout and "1.000 ms / call" in proc.stdout


def test_json_and_out_file(run_cli, write, tmp_path):
    write("a.py", GOOD)
    write("b.py", GOOD)
    proc = run_cli("compare", "a.py", "b.py", "--json", "--out", "r.json", "--seed", "5", *QUICK)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["seed"] == 5 and doc["schema_version"] == 4
    base, cand = doc["samples"]["baseline_ns"], doc["samples"]["candidate_ns"]
    first = doc["samples"]["baseline_first"]
    assert len(base) == len(cand) == len(first) == 6 and doc["summary"]["n_pairs"] == 6 and sum(first) == 3
    # Real timing of one kernel against itself has no band a test may assert: 6 pairs of ~2 ms
    # blocks read 0.42 once in CI (2026-12-03).  What must hold on any host is that the summary
    # is derived from the raw samples it is written beside.
    s = doc["summary"]
    assert s["speedup"] == pytest.approx(median_speedup(base, cand, first), rel=1e-12)
    assert s["period_effect"]["n_baseline_first"] == 3 and set(s["by_position_median_ns"]) == {"baseline", "candidate"}
    assert s["ci_low"] <= s["speedup"] <= s["ci_high"] and 0 <= s["p_value"] <= 1
    assert "host" in doc["fingerprint"]
    assert json.loads((tmp_path / "r.json").read_text()) == doc


@pytest.mark.parametrize("case,files,code,needles", [
    ("missing file", {"a.py": GOOD}, 2, ["nope.py: no such file"]),
    ("no function", {"a.py": GOOD, "nope.py": "def other(x):\n    return x\n"}, 2,
     ["nope.py: defines no function named 'kernel'"]),
    ("raises", {"a.py": GOOD, "nope.py": "def kernel(x):\n    raise ValueError('boom')\n"}, 1,
     ["candidate.raised", "nope.py:kernel raised ValueError: boom at nope.py:2"]),
    ("shape changes", {"a.py": GOOD, "nope.py": """
        import itertools
        _n = itertools.count()

        def kernel(x):
            return x[: 1 + next(_n) % 2]
     """}, 1, ["output.inconsistent", "nope.py:kernel returned"]),
    ("syntax error", {"a.py": GOOD, "nope.py": "def kernel(x:\n"}, 2, ["nope.py:1: syntax error"]),
    ("different outputs", {"a.py": GOOD, "nope.py": "def kernel(x):\n    return x.sum()\n"}, 2,
     ["do not compute the same thing"]),
])
def test_bad_input_one_line_error(run_cli, write, case, files, code, needles):
    for name, text in files.items():
        write(name, text)
    proc = run_cli("compare", "a.py", "nope.py", *QUICK)
    _one_line_error(proc, code, *needles)


def test_bad_option_values(run_cli, write):
    write("a.py", GOOD)
    _one_line_error(run_cli("compare", "a.py", "a.py", "--min-pairs", "3"), 2, "min_pairs must be >= 5")
    _one_line_error(run_cli("compare", "a.py", "a.py", "--device", "tpu"), 2, "--device must be cpu or cuda")
