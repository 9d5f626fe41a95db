"""selfcheck's orchestration, including the CUDA path, driven by fakes (no GPU, no real timing)."""
from perfbench.cli.report import selfcheck_table
from perfbench.device.device_session import describe
from perfbench.device.environment import environment_report
from perfbench.testing.fake_nvml import FakeNvml, FakeNvmlDevice
from perfbench.selfcheck.backend import Backend
from perfbench.selfcheck.run import SelfcheckConfig, plot, run_selfcheck
from perfbench.testing.timers import FakeKernel, FakeTimer


class FakeLoad:
    """The "concurrent load kernel": while started, every fake kernel runs 30% slower."""

    on = False

    def start(self):
        FakeLoad.on = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        FakeLoad.on = False


def fake_cuda_backend() -> Backend:
    timer = FakeTimer(noise=0.005, drift=lambda t_s: 1.3 if FakeLoad.on else 1.0, seed=3)
    costs = {"null": 0.0, "memory": 1e6, "compute": 2e6}

    def kernels(kind, extra):
        return FakeKernel(f"{kind}+{extra}", costs[kind] * (1 + extra)), (lambda seed: ())

    return Backend("cuda:0", timer, kernels, FakeLoad, None, 50 << 20)


def test_cuda_path_with_fakes(tmp_path, monkeypatch):
    import perfbench.device.device_session as session

    gpu = FakeNvmlDevice(name="Fake H200")
    monkeypatch.setattr(session, "cuda_pci_bus_id", lambda device: gpu.pci_bus_id)
    report = run_selfcheck(fake_cuda_backend(), SelfcheckConfig(quick=True),
                           env=lambda: {"gpu": describe("cuda:0", nvml_factory=lambda: FakeNvml(gpu)),
                                        "problems": []},
                           tasks=lambda: {"triton_row_softmax": "pass"},
                           run_to_run=lambda: {"task": "triton_row_softmax", "median": 2.0, "spread": 1.04,
                                               "runs": [{"speedup": 2.0, "ci": [1.9, 2.1], "unstable": False}] * 3,
                                               "mean_ci_half_width": 0.05, "honest_runs": 3})
    assert report["clocks"]["gpu"]["name"] == "Fake H200"
    assert report["device"] == "cuda:0"
    assert report["timer"]["timer"] == "fake"
    assert report["noise"]["memory"]["false_significant_p01"] == 0
    assert report["drift"]["ratio"] > 5            # AB-BA far better than sequential under the step
    assert report["sensitivity"]["5%"]["detected"]
    assert report["verdict"].startswith("this machine resolves ~5% differences")
    table = selfcheck_table(report)
    assert table.splitlines()[-1].startswith("verdict")
    assert "task triton_row_softmax pass" in " ".join(table.split())
    assert ("run to run triton_row_softmax: 3 scores, median 2.000, spread 4.0% vs CI +/-5.0%; CI holds the median "
            "(or says unstable) in 3/3") in " ".join(table.split())
    png = plot(report, tmp_path / "s.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_describe_reads_fake_nvml_by_bus_id(monkeypatch):
    import perfbench.device.device_session as session

    gpu = FakeNvmlDevice(name="Fake H200", pci_bus_id="00000000:09:00.0")
    monkeypatch.setattr(session, "cuda_pci_bus_id", lambda device: "00000000:09:00.0")
    d = describe("cuda:0", nvml_factory=lambda: FakeNvml(FakeNvmlDevice(pci_bus_id="00000000:01:00.0"), gpu))
    assert d["name"] == "Fake H200" and d["sm_mhz"] == gpu.sm_mhz and d["reasons"] == []


def test_environment_report_on_cpu():
    r = environment_report("cpu")
    assert r["gpu"]["reason"] == "CPU timing: GPU clocks do not apply"
    assert r["verdict"]


def test_run_to_run_records_which_runs_said_unstable(monkeypatch, fake_score, tmp_path):
    """A run whose worker processes disagree (1.6 vs 2.6) says so; the two steady runs (2.0 and
    2.9, CIs about +/-0.5%) do not, and their CIs miss the median run (2.04)."""
    import perfbench.selfcheck.run_to_run as r2r

    results = iter([fake_score(2.0), fake_score(1.6, 2.6), fake_score(2.9)])
    monkeypatch.setattr(r2r, "score", lambda task, candidate, cfg: next(results))
    out = r2r.run_to_run_section("cpu", 3, task=tmp_path)
    assert [row["unstable"] for row in out["runs"]] == [False, True, False]
    assert out["median"] == out["runs"][1]["speedup"] and out["honest_runs"] == 1
