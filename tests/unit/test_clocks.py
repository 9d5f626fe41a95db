"""Clock locking and monitoring against the fake NVML: no real GPU is ever touched."""
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from perfbench.core.errors import EnvironmentUnavailable
from perfbench.device.clocks import ClockLock, ClockRequest, read_marker, reset_stale
from perfbench.device.monitor import Monitor
from perfbench.device.nvml import CLOCK_LIMIT_TDP, REASON_APP_CLOCKS, REASON_SW_THERMAL
from perfbench.testing.fake_nvml import FakeNvml, FakeNvmlDevice

BUS = "00000000:01:00.0"


@pytest.fixture(autouse=True)
def marker_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFBENCH_LOCK_DIR", str(tmp_path / "locks"))
    return tmp_path / "locks"


def _lock(gpu, **req):
    return ClockLock(FakeNvml(gpu), BUS, ClockRequest(**req))


def test_lock_verify_restore():
    gpu = FakeNvmlDevice()
    warmed = []
    lock = ClockLock(FakeNvml(gpu), BUS, ClockRequest("base"), warmup=lambda: warmed.append(1))
    with lock:
        assert lock.control.status == "locked"
        assert lock.control.target_sm_mhz == gpu.base_sm == lock.control.measured_sm_mhz
        assert gpu.locked == (CLOCK_LIMIT_TDP, CLOCK_LIMIT_TDP)
        assert read_marker(gpu.uuid)["pid"] == os.getpid()
        assert warmed == [1]
    assert gpu.locked is None and gpu.calls == [f"lock_gpu {CLOCK_LIMIT_TDP} {CLOCK_LIMIT_TDP}", "reset_gpu"]
    assert read_marker(gpu.uuid) is None


def test_max_and_mhz_policies_and_memory_lock():
    gpu = FakeNvmlDevice()
    with _lock(gpu, policy="max") as lock:
        assert lock.control.target_sm_mhz == gpu.max_sm and gpu.locked == (gpu.max_sm, gpu.max_sm)
    with _lock(gpu, policy="mhz", sm_mhz=1500, mem_mhz=2619) as lock:
        assert lock.control.status == "locked" and gpu.mem_locked == (2619, 2619)
    assert gpu.mem_locked is None and gpu.locked is None


def test_restore_after_exception():
    gpu = FakeNvmlDevice()
    with pytest.raises(RuntimeError):
        with _lock(gpu, policy="base"):
            raise RuntimeError("kernel blew up")
    assert gpu.locked is None and gpu.calls[-1] == "reset_gpu"


def test_restore_after_sigterm_to_child_scorer(tmp_path):
    log = tmp_path / "calls.json"
    script = textwrap.dedent(f"""
        import json, time
        from perfbench.device.clocks import ClockLock, ClockRequest
        from perfbench.testing.fake_nvml import FakeNvml, FakeNvmlDevice
        gpu = FakeNvmlDevice()
        try:
            with ClockLock(FakeNvml(gpu), "{BUS}", ClockRequest("base")) as lock:
                print(lock.control.status, flush=True)
                time.sleep(60)
        finally:
            open({str(log)!r}, "w").write(json.dumps(gpu.calls))
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))
    assert proc.stdout.readline().strip() == "locked"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    assert json.loads(log.read_text())[-1] == "reset_gpu"


def test_preexisting_lock_left_alone(marker_dir):
    gpu = FakeNvmlDevice(reasons=REASON_APP_CLOCKS)
    with _lock(gpu, policy="base") as lock:
        assert lock.control.status == "preexisting"
    assert gpu.calls == []
    # a lock another live perfbench holds
    gpu = FakeNvmlDevice()
    marker_dir.mkdir(parents=True)
    (marker_dir / f"{gpu.uuid}.json").write_text(json.dumps({"pid": os.getppid(), "uuid": gpu.uuid}))
    with _lock(gpu, policy="base") as lock:
        assert lock.control.status == "preexisting" and str(os.getppid()) in lock.control.reason
    assert gpu.calls == []


def test_dead_owner_detected_and_reset(marker_dir):
    gpu = FakeNvmlDevice(locked=(CLOCK_LIMIT_TDP, CLOCK_LIMIT_TDP))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    marker_dir.mkdir(parents=True)
    (marker_dir / f"{gpu.uuid}.json").write_text(json.dumps({"pid": dead.pid, "uuid": gpu.uuid, "changed": ["gpu"]}))
    with _lock(gpu, policy="base") as lock:
        assert lock.control.status == "unlocked" and "perfbench clocks reset" in lock.control.reason
    assert "dead pid" in reset_stale(FakeNvml(gpu), BUS)
    assert gpu.locked is None and read_marker(gpu.uuid) is None
    assert "nothing changed" in reset_stale(FakeNvml(gpu), BUS)


@pytest.mark.parametrize("setup,status,needle", [
    ({"lock_error": "no_permission"}, "unlocked", "no_permission"),
    ({"lock_error": "not_supported"}, "unlocked", "not_supported"),
    ({"mig": True}, "unlocked", "MIG"),
    ({"lock_applies": False}, "unverified", "runs at 1755 MHz"),
])
def test_failure_statuses_recorded(setup, status, needle):
    gpu = FakeNvmlDevice(**setup)
    with _lock(gpu, policy="base") as lock:
        assert lock.control.status == status and needle in lock.control.reason
    assert gpu.locked is None or setup.get("lock_applies") is False


def test_no_nvml_and_require():
    with ClockLock(None, None, ClockRequest("base"), unavailable_reason="no_driver: NVML Shared Library Not Found") as lock:
        assert lock.control.status == "unlocked" and "no_driver" in lock.control.reason
    with pytest.raises(EnvironmentUnavailable, match="require-locked-clocks"):
        with ClockLock(None, None, ClockRequest("base", require=True), unavailable_reason="no_driver"):
            pass
    gpu = FakeNvmlDevice(lock_error="no_permission")
    with pytest.raises(EnvironmentUnavailable):
        with _lock(gpu, policy="base", require=True):
            pass


def test_dry_run_changes_nothing():
    gpu = FakeNvmlDevice()
    with _lock(gpu, policy="base", dry_run=True) as lock:
        assert lock.control.status == "dry_run" and lock.control.target_sm_mhz == gpu.base_sm
    assert gpu.calls == []


def test_persistent_lock_outlives_and_resets(marker_dir):
    gpu = FakeNvmlDevice()
    with ClockLock(FakeNvml(gpu), BUS, ClockRequest("base"), persistent=True) as lock:
        pass
    assert lock.control.status == "locked" and gpu.locked is not None
    assert read_marker(gpu.uuid)["pid"] == 0
    with _lock(gpu, policy="base") as other:
        assert other.control.status == "preexisting"
    assert "reset" in reset_stale(FakeNvml(gpu), BUS) and gpu.locked is None


def test_monitor_flags_throttling():
    gpu = FakeNvmlDevice()
    mon = Monitor(FakeNvml(gpu), gpu)
    mon.begin()
    c = mon.end()
    assert not c.throttled and c.sm_mhz == 1755
    mon.begin()
    gpu.reasons, gpu.thermal_violation_ns, gpu.sm_mhz = REASON_SW_THERMAL, 5_000, 900
    c = mon.end()
    assert c.throttled and c.sm_mhz == 900 and c.thermal_violation_ns == 5_000
    assert c.to_dict()["reason_names"] == ["sw_thermal"]


def test_throttled_pairs_remeasured_after_cooldown():
    from perfbench.timing.sampler import SamplerConfig
    from perfbench.testing.timers import FakeKernel, FakeTimer

    gpu = FakeNvmlDevice()

    class FlakyMonitor(Monitor):
        n = 0

        def begin(self):
            FlakyMonitor.n += 1
            gpu.reasons = REASON_SW_THERMAL if FlakyMonitor.n in (3, 4, 9) else 0
            super().begin()

    cfg = SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, min_block_s=0.0, cooldown_s=0.0)
    from perfbench.timing.inprocess import InProcessSide
    from perfbench.timing.sampler import sample_pairs

    t = FakeTimer()
    sides = [InProcessSide(n, FakeKernel(n, 1e6), lambda s: (), t) for n in ("A", "B")]
    samples = sample_pairs(*sides, cfg, seed=1, monitor=FlakyMonitor(FakeNvml(gpu), gpu))
    assert samples.n_pairs == 6
    assert samples.discarded_throttled == 2       # pairs containing blocks 3-4 and 9 were redone
    assert samples.throttled_pairs == ()          # none kept
    assert len(samples.conditions) == 6
    FlakyMonitor.n = 0
    keep = sample_pairs(*sides, SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.0, min_block_s=0.0,
                                              remeasure_throttled=False),
                        seed=1, monitor=FlakyMonitor(FakeNvml(gpu), gpu))
    assert keep.discarded_throttled == 0 and len(keep.throttled_pairs) >= 1
