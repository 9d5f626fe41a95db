import pytest

from perfbench import bench_configs
from perfbench.errors import UsageError
from perfbench.pipeline.calibrate import Calibration


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
