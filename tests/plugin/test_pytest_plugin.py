"""The pytest plugin, through pytester: a slowed function fails the run with a clear message, an
unchanged one passes, saved runs round-trip, another machine's run is refused.  The functions
sleep: 1 ms vs 3 ms is a difference no host's noise hides, so these tests cannot flake."""
import json

import pytest

pytest_plugins = ["pytester"]

BENCH = """
import time
import pytest

def fast(x):
    time.sleep(0.001)
    return x

def slow(x):
    time.sleep(0.003)
    return x

def make(seed):
    return (seed,)

def test_paired(perfbench):
    assert perfbench.compare(fast, {cand}, make) == 0   # the function's own result comes back

def test_single(perfbench):
    assert perfbench({single}, make) == 0
"""


def _bench(pytester, cand="fast", single="fast"):
    pytester.makepyfile(test_bench=BENCH.format(cand=cand, single=single))


def test_the_plugin_is_registered_by_its_entry_point(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--perfbench-save=NAME*", "*--perfbench-fail-on=*"])


def test_a_slowed_function_fails_the_run_with_a_clear_message(pytester):
    _bench(pytester, cand="slow")
    result = pytester.runpytest("--perfbench-fail-on=regression", "-k", "paired", "--perfbench-seed=3")
    result.assert_outcomes(passed=0, failed=1, deselected=1)
    assert result.ret == 1
    result.stdout.re_match_lines([r".*perfbench: test_bench.py::test_paired: \d+\.\d% slower \(paired\): "
                                  r"speedup 0\.\d+x, CI \[.*\] entirely below 1 and beyond the 5% threshold"])
    result.stdout.fnmatch_lines(["*test_paired*baseline (paired)*REGRESSION*"])


def test_an_unchanged_function_passes_and_a_slowdown_without_fail_on_is_only_reported(pytester):
    _bench(pytester, cand="fast")
    result = pytester.runpytest("--perfbench-fail-on=regression", "-k", "paired")
    result.assert_outcomes(passed=1, deselected=1)
    _bench(pytester, cand="slow")
    result = pytester.runpytest("-k", "paired")       # --perfbench-fail-on defaults to never
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*REGRESSION*"])


def test_save_then_compare_round_trip_and_a_slowdown_against_the_saved_run(pytester):
    _bench(pytester)
    saved = pytester.runpytest("--perfbench-save=base", "--perfbench-json=out.json")
    saved.assert_outcomes(passed=2)
    [machine] = list((pytester.path / ".perfbench").iterdir())
    run = machine / "0001_base.json"
    doc = json.loads(run.read_text())
    assert json.loads((pytester.path / "out.json").read_text())["benchmarks"] == doc["benchmarks"]
    # pytest-benchmark's layout, with perfbench's fields beside it
    assert {"machine_info", "commit_info", "benchmarks", "datetime", "version"} <= set(doc)
    single = next(b for b in doc["benchmarks"] if b["name"] == "test_single")
    assert single["fullname"] == "test_bench.py::test_single" and single["stats"]["rounds"] >= 12
    assert 0.001 < single["stats"]["median"] < 0.01             # seconds (a sleep of 1 ms), not ms
    assert doc["perfbench"]["machine_key"] == machine.name
    assert doc["perfbench"]["malloc"] == "steady"                # glibc's heap thresholds fixed (allocator.py)
    saved.stdout.fnmatch_lines([f"saved: {run}"])

    same = pytester.runpytest("--perfbench-compare=base", "--perfbench-fail-on=regression", "-k", "single")
    same.assert_outcomes(passed=1, deselected=1)
    same.stdout.fnmatch_lines(["*test_single*0001_base*"])   # compared (and not failed)
    assert "REGRESSION" not in same.stdout.str()

    _bench(pytester, single="slow")
    slower = pytester.runpytest("--perfbench-compare", "--perfbench-fail-on=regression", "-k", "single")
    slower.assert_outcomes(failed=1, deselected=1)
    slower.stdout.re_match_lines([r".*test_single: \d+\.\d% slower \(unpaired \(saved run\)\).*beyond the 15% threshold"])


def test_another_machines_saved_run_is_refused(pytester):
    _bench(pytester)
    pytester.runpytest("--perfbench-save=base", "-k", "single").assert_outcomes(passed=1, deselected=1)
    [machine] = list((pytester.path / ".perfbench").iterdir())
    foreign = pytester.path / ".perfbench" / "cpu-some-other-cpu-64c-py3.11-torch2.13.0"
    machine.rename(foreign)
    doc = json.loads((foreign / "0001_base.json").read_text())
    doc["perfbench"]["machine_key"] = foreign.name
    (foreign / "0001_base.json").write_text(json.dumps(doc))

    result = pytester.runpytest("--perfbench-compare=base")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*no saved run 'base' for this machine ({machine.name}); saved runs exist only "
                                 f"for other machines ({foreign.name}): perfbench never compares across machines*"])
    by_path = pytester.runpytest(f"--perfbench-compare={foreign / '0001_base.json'}")
    assert by_path.ret == pytest.ExitCode.USAGE_ERROR
    by_path.stderr.fnmatch_lines([f"*was measured on {foreign.name}, this machine is {machine.name}*"])


def test_marker_settings_are_validated(pytester):
    pytester.makepyfile(test_m="""
        import pytest

        @pytest.mark.perfbench(treshold=0.1)
        def test_typo(perfbench):
            perfbench(lambda x: x, lambda seed: (seed,))

        @pytest.mark.perfbench(min_pairs=2)
        def test_too_few(perfbench):
            perfbench(lambda x: x, lambda seed: (seed,))

        @pytest.mark.perfbench(threshold=-0.1)
        def test_negative(perfbench):
            perfbench(lambda x: x, lambda seed: (seed,))

        @pytest.mark.perfbench(threshold=1, max_pairs=6, time_budget_s=1)   # ints where floats go: fine
        def test_ints(perfbench):
            assert perfbench(lambda x: x, lambda seed: (seed,)) == 0
    """)
    result = pytester.runpytest()
    result.assert_outcomes(errors=3, passed=1)   # errors at the fixture's setup, before anything is timed
    result.stdout.fnmatch_lines(["*@pytest.mark.perfbench has no setting 'treshold' (known: threshold, *",
                                 "*@pytest.mark.perfbench: min_pairs must be >= 5*",
                                 "*@pytest.mark.perfbench threshold=-0.1: expected a fraction >= 0, e.g. 0.05*"])


def test_disable_calls_each_function_once_and_times_nothing(pytester):
    pytester.makepyfile(test_d="""
        calls = []

        def test_once(perfbench):
            assert perfbench(lambda x: calls.append(x) or x, lambda seed: (seed,)) == 0
            assert calls == [0]
    """)
    result = pytester.runpytest("--perfbench-disable", "--perfbench-save=x")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / ".perfbench").exists() and "perfbench:" not in result.stdout.str()
