"""This machine's peaks (device/peaks.py, `perfbench peaks`): structure and selection exactly;
the measured figures only for their shape (positive, ordered), never their size."""
import json
from pathlib import Path

import pytest

from perfbench.device.peaks import BANDWIDTH_KINDS, PeakReport, Rate, cpu_caches, measure_peaks, working_sets


def _cache(root: Path, index: int, level: int, kind: str, size: str) -> None:
    d = root / f"index{index}"
    d.mkdir(parents=True)
    (d / "level").write_text(f"{level}\n")
    (d / "type").write_text(f"{kind}\n")
    (d / "size").write_text(f"{size}\n")


def test_the_data_caches_are_read_from_sysfs(tmp_path):
    _cache(tmp_path, 0, 1, "Data", "48K")
    _cache(tmp_path, 1, 1, "Instruction", "32K")
    _cache(tmp_path, 2, 2, "Unified", "2048K")
    _cache(tmp_path, 3, 3, "Unified", "36M")
    assert cpu_caches(tmp_path) == {"L1d": 48 << 10, "L2": 2 << 20, "L3": 36 << 20}
    assert cpu_caches(tmp_path / "absent") == {}


def test_working_sets_run_from_a_quarter_of_l1_to_four_times_the_last_level():
    sizes = working_sets({"L1d": 32 << 10, "L2": 1 << 20, "L3": 32 << 20})
    assert sizes[0] == 8 << 10 and sizes[-1] == 128 << 20
    assert all(b == 4 * a for a, b in zip(sizes, sizes[1:]))
    assert working_sets({}, quick=True)[0] == 8 << 10   # no sysfs: a 32 KiB L1 and a 32 MiB L3 assumed


def _rate(kind, ws, value):
    return Rate(kind, value, value * 0.9, value * 1.1, working_set_bytes=ws)


def test_the_bandwidth_for_a_working_set_is_the_level_it_fits():
    report = PeakReport("cpu", 1, {}, (_rate("copy", 1 << 10, 100e9), _rate("copy", 1 << 20, 50e9),
                                       _rate("copy", 1 << 30, 10e9), _rate("read", 1 << 30, 12e9)),
                        (Rate("gemm", 1e11, 9e10, 1.1e11, dtype="float32"),), 1.0)
    assert report.bandwidth_for(512) == 100e9 and report.bandwidth_for(1 << 20) == 50e9
    assert report.bandwidth_for(1 << 40) == 10e9 and report.bandwidth_for(1 << 40, "read") == 12e9
    assert report.fastest_bandwidth() == pytest.approx(110e9)
    assert report.gemm_rate("float32") == 1e11 and report.gemm_rate("bfloat16") is None
    with pytest.raises(ValueError, match="no triad bandwidth"):
        report.bandwidth_for(1, "triad")


def test_a_quick_measurement_has_every_kind_at_every_size_each_with_its_spread():
    report = measure_peaks("cpu", 1, quick=True)
    sizes = sorted({r.working_set_bytes for r in report.bandwidth})
    assert len(report.bandwidth) == len(BANDWIDTH_KINDS) * len(sizes)
    assert [r.dtype for r in report.gemm] == ["float32", "float64"]
    assert all(0 < r.low <= r.value <= r.high for r in report.bandwidth + report.gemm)
    assert json.loads(json.dumps(report.to_dict()))["threads"] == 1


def test_a_score_measures_the_peaks_of_one_level_and_dtype_once(monkeypatch):
    """A problem's benchmarks share their level and dtype: measured for the first, reused after."""
    from perfbench.device import peaks

    calls = []
    real = peaks.measure_bandwidth

    def counted(*args, **kwargs):
        calls.append(args[2])   # the working sets measured
        return real(*args, **kwargs)

    monkeypatch.setattr(peaks, "measure_bandwidth", counted)
    memo: dict = {}
    first = peaks.bound_peaks("cpu", 1, 4096, None, memo)
    again = peaks.bound_peaks("cpu", 1, 5000, None, memo)
    assert again == first and len(calls) == 1
    again["flop_s"] = 1.0   # a copy: what one benchmark's verdict does with it is not the next one's
    assert peaks.bound_peaks("cpu", 1, 5000, None, memo) == first
    assert peaks.bound_peaks("cpu", 1, 64 << 20, None, memo) != first and len(calls) == 2
