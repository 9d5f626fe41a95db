import pytest

from perfbench.core.errors import UsageError
from perfbench.pipeline.calibrate import Calibration
from perfbench.task import bench_configs


def test_write_merge_and_lookup(tmp_path):
    key = bench_configs.device_key("cpu", {"host": {"cpu_model": "AMD EPYC 9554 64-Core Processor"}})
    assert key == "cpu-amd-epyc-9554-64-core"
    assert bench_configs.device_key("cpu", {"host": {"cpu_model": "AMD EPYC"}}, threads=2) == "cpu-amd-epyc-2t"
    assert bench_configs.device_key("cuda", {"cuda": {"name": "NVIDIA H200"}}, threads=2) == "cuda-nvidia-h200"
    bench_configs.write(key, [Calibration("a", 2.5, 2.4, 2.6, 30, (2.4, 2.5, 2.6))], tmp_path)
    bench_configs.write(key, [Calibration("b", 1.5, 1.4, 1.6, 30, (1.5,))], tmp_path)   # merges, keeps "a"
    assert bench_configs.lookup("a", key, tmp_path).value == 2.5
    found = bench_configs.lookup("b", key, tmp_path)
    assert found.value == 1.5 and found.source == f"bench_configs/{key}.toml"
    assert bench_configs.lookup("c", key, tmp_path) is None
    assert bench_configs.lookup("a", "cuda-other", tmp_path) is None


def test_bad_entries_are_usage_errors(tmp_path):
    (tmp_path / "k.toml").write_text("[tasks.a]\ns_ref = 0.9\n")
    with pytest.raises(UsageError, match="s_ref must be a number > 1"):
        bench_configs.lookup("a", "k", tmp_path)
    (tmp_path / "k.toml").write_text("[tasks.a\n")
    with pytest.raises(UsageError, match="invalid TOML"):
        bench_configs.lookup("a", "k", tmp_path)


def test_an_s_ref_from_another_protocol_says_so(tmp_path):
    """Entries written before the protocol was recorded were measured by protocol 1."""
    from perfbench.core.crossover import PROTOCOL_VERSION
    from perfbench.task.bench_configs import lookup

    (tmp_path / "cpu-x-1t.toml").write_text('[tasks.old]\ns_ref = 2.0\nperfbench = "0.1.0"\nmeasured = "2026-12-02"\n'
                                            f'[tasks.new]\ns_ref = 2.0\nprotocol = {PROTOCOL_VERSION}\n')
    old = lookup("old", "cpu-x-1t", tmp_path)
    assert old.protocol == 1 and "measured by protocol 1 (perfbench 0.1.0, 2026-12-02)" in old.other_protocol
    assert lookup("new", "cpu-x-1t", tmp_path).other_protocol is None


def test_the_baselines_per_call_time_is_recorded_and_a_drift_from_it_said(tmp_path):
    """#38: a calibration from another host of the same key (another day's VM) reads its s_ref
    against a baseline that runs at another speed.  The calibration records the baseline's ns per
    call in each run; a score whose baseline is further from their median than the runs were
    from each other (at least 10%) warns `baseline_drift`."""
    runs_ns = (8.0e6, 8.4e6, 8.2e6)
    bench_configs.write("k", [Calibration("a", 3.0, 2.9, 3.1, 30, (2.9, 3.0, 3.1), baseline_ns=runs_ns)], tmp_path)
    found = bench_configs.lookup("a", "k", tmp_path)
    assert found.baseline_ns == runs_ns
    assert found.baseline_drift(8.2e6) is None and found.baseline_drift(8.9e6) is None   # within 10%
    said = found.baseline_drift(16.0e6)   # the baseline takes twice as long here
    assert said.startswith("baseline_drift: the baseline takes 16.000 ms a call here")
    assert "it took 8.000-8.400 ms" in said and "bench_configs/k.toml" in said
    assert found.baseline_drift(7.0e6) is not None   # faster counts too
    # the runs' own spread widens what is allowed beyond the 10% floor
    wide = bench_configs.SRef(3.0, "x", baseline_ns=(5e6, 10e6))
    assert wide.baseline_drift(12e6) is None and wide.baseline_drift(25e6) is not None
    # an entry from before this was recorded: nothing to compare, nothing said
    bench_configs.write("k", [Calibration("b", 3.0, 2.9, 3.1, 30, (3.0,))], tmp_path)
    assert bench_configs.lookup("b", "k", tmp_path).baseline_drift(1.0) is None
    assert "baseline_ns" not in (tmp_path / "k.toml").read_text().split("[tasks.b]")[1]


def test_a_malformed_baseline_time_names_the_field(tmp_path):
    (tmp_path / "k.toml").write_text('[tasks.a]\ns_ref = 2.0\nbaseline_ns = ["fast"]\n')
    with pytest.raises(UsageError, match=r"k.toml: \[tasks.a\] baseline_ns must be a list of times > 0"):
        bench_configs.lookup("a", "k", tmp_path)
