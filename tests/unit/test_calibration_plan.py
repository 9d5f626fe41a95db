"""Calibration plans: parsed field by field, validity decided from the measurements (pure), the
device file written after every task and an interrupted run resumed (scorings faked: the real
ones are benchmarks' business)."""
from pathlib import Path

import pytest

from perfbench.core.crossover import PROTOCOL_VERSION
from perfbench.core.errors import UsageError
from perfbench.pipeline import calibrate as cal
from perfbench.pipeline.calibrate import Calibration, calibrate_plan, validity
from perfbench.pipeline.calibration_plan import CalibrationPlan
from perfbench.task import bench_configs
from perfbench.task.spec import load_task



def _plan(tmp_path, body: str):
    import perfbench
    from pathlib import Path
    repo_tasks = Path(perfbench.__file__).resolve().parents[1] / "tasks"
    path = tmp_path / "cpu.toml"
    path.write_text(body.replace("TASKS", str(repo_tasks)))
    return path


def test_a_plan_is_parsed_and_its_tasks_resolved(tmp_path):
    plan = CalibrationPlan.load(_plan(tmp_path, 'device = "cpu"\ntasks = ["TASKS/row_softmax", "TASKS/csr_spmv"]\n'
                                                'runs = 2\npairs = 8\n'))
    assert (plan.name, plan.device, plan.runs, plan.pairs, plan.min_s_ref) == ("cpu", "cpu", 2, 8, 1.15)
    assert [t.name for t in plan.tasks] == ["row_softmax", "csr_spmv"] and len(plan.digest) == 12


@pytest.mark.parametrize("body,message", [
    ('tasks = ["TASKS/row_softmax"]\nrunz = 2\n', "unknown field(s) runz"),
    ('tasks = ["TASKS/row_softmax"]\nruns = 0\n', "runs = 0: expected an integer in 1..50"),
    ('tasks = ["TASKS/row_softmax"]\nruns = true\n', "runs = True: expected an integer in 1..50"),
    ('tasks = ["TASKS/nope"]\n', "tasks: TASKS/nope: no task.toml there"),
    ('tasks = []\n', "tasks = []: expected a non-empty list"),
    ('device = "tpu"\ntasks = ["TASKS/row_softmax"]\n', "device = 'tpu': expected cpu or cuda"),
    ('tasks = ["TASKS/row_softmax"]\nmin_s_ref = 1.0\n', "min_s_ref = 1.0: expected a number > 1"),
])
def test_a_bad_plan_names_the_file_and_the_field(tmp_path, body, message):
    path = _plan(tmp_path, body)
    with pytest.raises(UsageError) as err:
        CalibrationPlan.load(path)
    import perfbench
    from pathlib import Path
    assert str(err.value).startswith(f"{path}: ")
    assert message.replace("TASKS", str(Path(perfbench.__file__).resolve().parents[1] / "tasks")) in str(err.value)


def _entry(runs):
    s = sorted(runs)[len(runs) // 2]
    return Calibration("t", s, s * 0.9, s * 1.1, 60, tuple(runs))


def test_validity_names_every_reason_and_none_for_a_good_task(tmp_path):
    plan = CalibrationPlan.load(_plan(tmp_path, 'tasks = ["TASKS/row_softmax"]\n'))
    assert validity(plan, _entry([3.0, 3.1, 3.05]), [1.1, 1.0, 1.2], "", [1.0, 0.98, 1.02]) == ()
    why = validity(plan, _entry([1.05, 1.1, 1.4]), [1.3, 1.2, 1.4], "", [1.05, 1.02, 1.08])
    assert why == ("s_ref 1.100 is below 1.15",
                   "unstable: runs 1.050..1.400 differ by 32% (more than 15%)",
                   "the starter already reaches s_ref (speedup 1.300, CI from 1.200)",
                   "the baseline against itself reads 1.050 [1.020, 1.080]: a noise floor of 8.0% moves R_perf "
                   "by up to 0.81 at s_ref 1.10 (more than 0.1)")
    # A floor that excludes 1 but moves R little is a small, known bias, not invalidity; the same
    # floor is too much for a task whose s_ref is close to 1; the low side counts as the high.
    assert validity(plan, _entry([3.0, 3.1, 3.05]), None, "", [1.011, 1.001, 1.023]) == ()
    assert validity(plan, _entry([7.0, 7.0, 7.0]), None, "", [1.01, 0.85, 1.15]) == ()      # 0.08 of R
    assert validity(plan, _entry([1.5, 1.5, 1.5]), None, "", [1.01, 0.95, 1.03]) == (
        "the baseline against itself reads 1.010 [0.950, 1.030]: a noise floor of 5.3% moves R_perf by up to "
        "0.13 at s_ref 1.50 (more than 0.1)",)
    assert validity(plan, _entry([3.0, 3.0, 3.0]), None, "output.mismatch: wrong", None) == \
        ("the starter is rejected (output.mismatch: wrong)",)


def test_each_task_is_written_when_done_and_a_rerun_resumes(tmp_path, monkeypatch):
    plan = CalibrationPlan.load(_plan(tmp_path, 'tasks = ["TASKS/row_softmax", "TASKS/csr_spmv"]\nruns = 2\n'))
    calls = []

    def solution(spec, cfg, runs, say, before_run):
        for run in range(runs):
            before_run(run)
            calls.append(spec.name)
            if spec.name == "csr_spmv" and len(calls) == 3:
                raise KeyboardInterrupt   # the run is interrupted during the second task
        return Calibration(spec.name, 3.0, 2.9, 3.1, 20 * runs, (3.0,) * runs)
    monkeypatch.setattr(cal, "_measure_solution", solution)
    sides = []
    monkeypatch.setattr(cal, "_side_speedup", lambda spec, file, cfg, say: sides.append(file.name) or ([1.0, 0.99, 1.01], ""))
    out = tmp_path / "configs"
    with pytest.raises(KeyboardInterrupt):
        calibrate_plan(plan, out_dir=out)
    [written] = list(out.glob("*.toml"))
    key = written.stem
    kept = bench_configs.entry("row_softmax", key, out)
    assert kept["valid"] is True and kept["plan"] == f"cpu:{plan.digest}" and kept["noise_floor"] == [1.0, 0.99, 1.01]
    # row_softmax's starter is its baseline's program (docstring aside): one scoring serves both.
    assert sides == ["baseline.py"] and kept["starter"] == kept["noise_floor"] and kept["starter_is_baseline"] is True
    assert bench_configs.entry("csr_spmv", key, out) is None

    calls.clear()
    paths, found = calibrate_plan(plan, out_dir=out)
    assert calls == ["csr_spmv", "csr_spmv"]                 # row_softmax kept, not measured again
    assert [c.task for c in found] == ["csr_spmv"] and paths == [written]
    assert bench_configs.entry("csr_spmv", key, out)["valid"] is True


def test_an_invalid_entry_is_used_but_said(tmp_path):
    bench_configs.write("cpu-x-1t", [Calibration("t", 1.1, 1.0, 1.2, 20, (1.1,),
                                                 (("valid", False), ("invalid_because", ["s_ref 1.100 is below 1.15"]))),
                              Calibration("small_gemm", 7.0, 6.5, 7.5, 60, (7.0,), (("valid", True),),
                                          task_files="0123456789ab")],   # before its inputs were edited
                        tmp_path)
    found = bench_configs.lookup("t", "cpu-x-1t", tmp_path)
    assert found.value == 1.1 and found.invalid == ("s_ref 1.100 is below 1.15",)


def test_tasks_list_says_kind_family_and_this_machines_s_ref(tmp_path, monkeypatch):
    import shutil
    from pathlib import Path

    from click.testing import CliRunner

    import perfbench
    from perfbench.cli.main import main
    from perfbench.device.fingerprint import fingerprint
    repo = Path(perfbench.__file__).resolve().parents[1]
    for name in ("row_softmax", "csr_spmv", "segment_sum", "small_gemm"):
        shutil.copytree(repo / "tasks" / name, tmp_path / "tasks" / name)
    (tmp_path / "kernels").symlink_to(repo / "kernels")   # csr_spmv shares ../../kernels/cpu
    key = bench_configs.device_key("cpu", fingerprint("cpu"), 1)
    bench_configs.write(key, [Calibration("row_softmax", 4.2, 4.0, 4.4, 60, (4.2,), (("valid", True),)),
                              Calibration("csr_spmv", 1.1, 1.0, 1.2, 60, (1.1,),
                                          (("valid", False), ("invalid_because", ["s_ref 1.100 is below 1.15"]))),
                              Calibration("small_gemm", 7.0, 6.5, 7.5, 60, (7.0,), (("valid", True),),
                                          task_files="0123456789ab")],   # before its inputs were edited
                        tmp_path / "configs")
    monkeypatch.setenv("PERFBENCH_BENCH_CONFIGS", str(tmp_path / "configs"))
    result = CliRunner().invoke(main, ["tasks", "list", "--dir", str(tmp_path / "tasks")])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "task         kind  device  family   timed    s_ref here",
        "csr_spmv     perf  cpu     cpu-cpp  medium   1.100 INVALID (s_ref 1.100 is below 1.15)",
        f"row_softmax  perf  cpu     python   medium   4.200 valid (bench_configs/{key}.toml)",
        "segment_sum  impl  cpu     python   default  - (impl)",
        f"small_gemm   perf  cpu     python   medium   7.000 measured on other task files (bench_configs/{key}.toml): recalibrate"]


def test_same_program_ignores_the_module_docstring_only(tmp_path):
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    a.write_text('"""Baseline."""\nimport torch\n\n\ndef kernel(x):\n    return x + 1\n')
    b.write_text('"""Starter: make it faster."""\nimport torch\n\ndef kernel(x):\n    return x + 1  # same\n')
    c.write_text('"""Baseline."""\nimport torch\n\n\ndef kernel(x):\n    return x + 2\n')
    assert cal.same_program(a, b) and not cal.same_program(a, c)
    assert not cal.same_program(a, tmp_path / "missing.py")


def test_a_measurement_whose_interval_misses_the_previous_one_is_not_reproducible(tmp_path):
    plan = CalibrationPlan.load(_plan(tmp_path, 'tasks = ["TASKS/row_softmax"]\n'))
    good = ([1.1, 1.0, 1.2], "", [1.0, 0.98, 1.02])
    then = {"s_ref": 8.3655, "ci": [7.461, 9.1991], "measured": "2026-12-01"}
    assert validity(plan, _entry([8.0, 8.0, 8.0]), *good, then) == ()            # [7.2, 8.8]: overlaps
    assert validity(plan, _entry([5.5, 5.5, 5.5]), *good, then) == (
        "not reproducible: s_ref 8.366 [7.461, 9.199] when calibrated on 2026-12-01, 5.500 [4.950, 6.050] now",)
    assert validity(plan, _entry([5.5, 5.5, 5.5]), *good, None) == ()           # nothing to compare with
    assert validity(plan, _entry([5.5, 5.5, 5.5]), *good, {"s_ref": 8.0}) == ()  # an entry without an interval


def test_remeasure_measures_again_and_marks_a_task_that_moved(tmp_path, monkeypatch):
    plan = CalibrationPlan.load(_plan(tmp_path, 'tasks = ["TASKS/row_softmax", "TASKS/csr_spmv"]\nruns = 1\n'))
    s_ref = {"row_softmax": 4.0, "csr_spmv": 6.0}
    calls = []

    def solution(spec, cfg, runs, say, before_run):
        calls.append(spec.name)
        s = s_ref[spec.name]
        return Calibration(spec.name, s, s * 0.95, s * 1.05, 20, (s,))
    monkeypatch.setattr(cal, "_measure_solution", solution)
    monkeypatch.setattr(cal, "_side_speedup", lambda spec, file, cfg, say: ([1.0, 0.99, 1.01], ""))
    out = tmp_path / "configs"
    [path], _ = calibrate_plan(plan, out_dir=out)
    calibrate_plan(plan, out_dir=out)
    assert calls == ["row_softmax", "csr_spmv"]                  # a plain rerun resumes: nothing to do
    s_ref["csr_spmv"] = 4.5                                      # [4.275, 4.725] misses [5.7, 6.3]
    _, found = calibrate_plan(plan, out_dir=out, remeasure=True)
    assert calls[2:] == ["row_softmax", "csr_spmv"] and [c.task for c in found] == ["row_softmax", "csr_spmv"]
    kept, moved = bench_configs.entry("row_softmax", path.stem, out), bench_configs.entry("csr_spmv", path.stem, out)
    assert kept["valid"] is True and "previous" not in kept
    assert moved["valid"] is False and moved["s_ref"] == 4.5
    assert moved["invalid_because"] == [f"not reproducible: s_ref 6.000 [5.700, 6.300] when calibrated on "
                                        f"{moved['measured']}, 4.500 [4.275, 4.725] now"]
    assert moved["previous"] == {"s_ref": 6.0, "ci": [5.7, 6.3], "measured": moved["measured"]}


def test_an_entry_from_another_protocol_is_measured_again_not_kept_nor_compared(tmp_path, monkeypatch):
    """A file calibrated by an older protocol (none recorded: 1) is not this protocol's s_ref: a
    plain run measures the task again, and a value the protocol change moved is not 'not
    reproducible'."""
    plan = CalibrationPlan.load(_plan(tmp_path, 'tasks = ["TASKS/row_softmax"]\nruns = 1\n'))
    calls = []

    def solution(spec, cfg, runs, say, before_run):
        calls.append(spec.name)
        return Calibration(spec.name, 4.0, 3.8, 4.2, 20, (4.0,))
    monkeypatch.setattr(cal, "_measure_solution", solution)
    monkeypatch.setattr(cal, "_side_speedup", lambda spec, file, cfg, say: ([1.0, 0.99, 1.01], ""))
    out = tmp_path / "configs"
    [path], _ = calibrate_plan(plan, out_dir=out)
    old = path.read_text().replace(f"protocol = {PROTOCOL_VERSION}", "protocol = 1").replace("s_ref = 4.0", "s_ref = 6.0")
    old = old.replace("ci = [3.8, 4.2]", "ci = [5.7, 6.3]")
    path.write_text(old)
    assert (bench_configs.entry("row_softmax", path.stem, out)["protocol"], bench_configs.entry("row_softmax", path.stem, out)["ci"]) == (1, [5.7, 6.3])
    calibrate_plan(plan, out_dir=out)
    assert calls == ["row_softmax", "row_softmax"]
    now = bench_configs.entry("row_softmax", path.stem, out)
    assert (now["s_ref"], now["protocol"], now["valid"], now["invalid_because"]) == (4.0, PROTOCOL_VERSION, True, [])
    assert "previous" not in now
    calibrate_plan(plan, out_dir=out)
    assert calls == ["row_softmax", "row_softmax"]   # this protocol's entry: resumed, kept


def test_remeasure_without_a_plan_is_a_one_line_usage_error():
    from click.testing import CliRunner
    from perfbench.cli.main import main
    result = CliRunner().invoke(main, ["calibrate", "--remeasure", "tasks/row_softmax"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].endswith("calibrate: --remeasure goes with --plan "
                                                            "(without one every task is measured anyway)")


def test_s_ref_is_the_median_of_the_runs_and_its_interval_spans_every_run(monkeypatch, fake_score):
    """Skewed runs: the mean (1.83) would put s_ref where no run but the outlier is."""
    from perfbench.pipeline.score import ScoreConfig
    from perfbench.task.spec import load_task

    results = iter([fake_score(1.2), fake_score(3.0), fake_score(1.3)])
    seen = []
    monkeypatch.setattr(cal, "score", lambda spec, file, cfg, log: seen.append((file.name, cfg)) or next(results))
    spec = load_task(Path(__file__).resolve().parents[2] / "tasks" / "row_softmax")
    entry = cal._measure_solution(spec, ScoreConfig(), 3, lambda m: None)
    assert entry.s_ref == pytest.approx(1.3) and entry.runs == pytest.approx((1.2, 3.0, 1.3))
    assert entry.ci_low < 1.2 < 3.0 < entry.ci_high and entry.n_pairs == 18
    # each run's baseline ns per call (its median pair), for bench_configs' drift check (#38)
    assert entry.baseline_ns == pytest.approx((1.2e6, 3.0e6, 1.3e6), rel=1e-3)
    assert [name for name, _ in seen] == ["solution.py"] * 3
    assert all(not cfg.stop_early for _, cfg in seen)   # every run measures its full share


def test_a_task_whose_timed_files_changed_is_measured_again_and_not_compared(tmp_path, monkeypatch):
    """New inputs (say) may move s_ref: the old entry is neither resumed nor read as the previous
    measurement, so a new value far from it is not 'not reproducible'."""
    plan = CalibrationPlan.load(_plan(tmp_path, 'tasks = ["TASKS/row_softmax"]\nruns = 1\n'))
    s_ref, calls = {"v": 3.0}, []

    def solution(spec, cfg, runs, say, before_run):
        calls.append(spec.name)
        v = s_ref["v"]
        return Calibration(spec.name, v, v * 0.95, v * 1.05, 20, (v,), task_files=cal.timed_files_digest(spec))
    monkeypatch.setattr(cal, "_measure_solution", solution)
    monkeypatch.setattr(cal, "_side_speedup", lambda spec, file, cfg, say: ([1.0, 0.99, 1.01], ""))
    out = tmp_path / "configs"
    [written] = calibrate_plan(plan, out_dir=out)[0]
    digest = bench_configs.entry("row_softmax", written.stem, out)["task_files"]
    assert digest == cal.timed_files_digest(load_task(plan.tasks[0]))
    calibrate_plan(plan, out_dir=out)
    assert calls == ["row_softmax"]                               # the same files: kept

    s_ref["v"] = 5.0                                              # what new inputs did to it
    monkeypatch.setattr(cal, "timed_files_digest", lambda spec: "0123456789ab")
    calibrate_plan(plan, out_dir=out)
    assert calls == ["row_softmax", "row_softmax"]
    entry = bench_configs.entry("row_softmax", written.stem, out)
    assert entry["s_ref"] == 5.0 and entry["valid"] is True and entry["task_files"] == "0123456789ab"
    assert "previous" not in entry
