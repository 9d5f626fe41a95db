"""`FakeNvml`: a scriptable NVML for the clock lock's tests (device/nvml.py's interface), with
clocks that follow a lock or not, errors on demand and a call log."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..device.nvml import CLOCK_LIMIT_TDP, ClockReading, NvmlError


@dataclass
class FakeNvmlDevice:
    """One simulated GPU's state; tests edit fields to script behaviour."""

    uuid: str = "GPU-fake-0"
    name: str = "Fake H100"
    pci_bus_id: str = "00000000:01:00.0"
    base_sm: int = 1200
    max_sm: int = 1980
    max_mem: int = 2619
    sm_mhz: int = 1755                      # current (boosting) clock
    mem_mhz: int = 2619
    temperature_c: int = 45
    power_w: float = 120.0
    reasons: int = 0
    power_violation_ns: int = 0
    thermal_violation_ns: int = 0
    mig: bool = False
    locked: tuple[int, int] | None = None   # SM lock (MHz or CLOCK_LIMIT_TDP)
    mem_locked: tuple[int, int] | None = None
    lock_error: str | None = None           # e.g. "no_permission": lock calls fail with it
    lock_applies: bool = True               # False: the lock "succeeds" but clocks do not follow
    calls: list[str] = field(default_factory=list)


class FakeNvml:
    """Scriptable NVML for tests: GPUs by PCI bus id, errors on demand, a call log."""

    def __init__(self, *gpus: FakeNvmlDevice, driver: str = "999.99"):
        self.gpus = {g.pci_bus_id: g for g in (gpus or (FakeNvmlDevice(),))}
        self._driver = driver

    def driver_version(self) -> str:
        return self._driver

    def handle(self, pci_bus_id: str) -> FakeNvmlDevice:
        try:
            return self.gpus[pci_bus_id]
        except KeyError:
            raise NvmlError("not_found", f"NVML: no GPU at {pci_bus_id}") from None

    def uuid(self, h: FakeNvmlDevice) -> str:
        return h.uuid

    def name(self, h: FakeNvmlDevice) -> str:
        return h.name

    def mig_enabled(self, h: FakeNvmlDevice) -> bool:
        return h.mig

    def read(self, h: FakeNvmlDevice) -> ClockReading:
        return ClockReading(h.sm_mhz, h.mem_mhz, h.temperature_c, h.power_w, h.reasons,
                            h.power_violation_ns, h.thermal_violation_ns)

    def max_clocks(self, h: FakeNvmlDevice) -> tuple[int, int]:
        return h.max_sm, h.max_mem

    def base_sm_clock(self, h: FakeNvmlDevice) -> int:
        return h.base_sm

    def _mutate(self, h: FakeNvmlDevice, what: str) -> None:
        h.calls.append(what)
        if h.lock_error:
            raise NvmlError(h.lock_error, f"NVML: {h.lock_error}")

    def lock_gpu_clocks(self, h: FakeNvmlDevice, lo: int, hi: int) -> None:
        self._mutate(h, f"lock_gpu {lo} {hi}")
        h.locked = (lo, hi)
        if h.lock_applies:
            h.sm_mhz = h.base_sm if hi == CLOCK_LIMIT_TDP else min(hi, h.max_sm)

    def reset_gpu_clocks(self, h: FakeNvmlDevice) -> None:
        self._mutate(h, "reset_gpu")
        h.locked = None
        h.sm_mhz = 1755

    def lock_memory_clocks(self, h: FakeNvmlDevice, lo: int, hi: int) -> None:
        self._mutate(h, f"lock_mem {lo} {hi}")
        h.mem_locked = (lo, hi)

    def reset_memory_clocks(self, h: FakeNvmlDevice) -> None:
        self._mutate(h, "reset_mem")
        h.mem_locked = None
