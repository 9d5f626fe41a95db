"""NVML behind one small interface: the only module that imports `pynvml` (nvidia-ml-py).

`open_nvml()` returns a `RealNvml` or raises `NvmlUnavailable` with a status the caller records
(no_driver, no_library, ...).  `FakeNvml` (perfbench/testing/fake_nvml.py) implements the same
interface with scriptable clocks, permissions, MIG mode and errors for tests.  Devices are found by PCI bus id, never by index:
CUDA and NVML may number GPUs differently (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

# Clock-event ("throttle") reason bits, as NVML defines them.
REASON_GPU_IDLE = 0x1
REASON_APP_CLOCKS = 0x2
REASON_SW_POWER_CAP = 0x4
REASON_HW_SLOWDOWN = 0x8
REASON_SYNC_BOOST = 0x10
REASON_SW_THERMAL = 0x20
REASON_HW_THERMAL = 0x40
REASON_HW_POWER_BRAKE = 0x80
# Reasons that mean "this block ran slower than the clocks we asked for".
THROTTLE_MASK = (REASON_SW_POWER_CAP | REASON_HW_SLOWDOWN | REASON_SW_THERMAL | REASON_HW_THERMAL
                 | REASON_HW_POWER_BRAKE)
REASON_NAMES = {REASON_GPU_IDLE: "gpu_idle", REASON_APP_CLOCKS: "applications_clocks",
                REASON_SW_POWER_CAP: "sw_power_cap", REASON_HW_SLOWDOWN: "hw_slowdown",
                REASON_SYNC_BOOST: "sync_boost", REASON_SW_THERMAL: "sw_thermal",
                REASON_HW_THERMAL: "hw_thermal", REASON_HW_POWER_BRAKE: "hw_power_brake"}
# Pseudo clock value meaning "the base (TDP) clock" for SetGpuLockedClocks.
CLOCK_LIMIT_TDP = 0xFFFFFF01


def reason_names(bits: int) -> list[str]:
    return [name for bit, name in REASON_NAMES.items() if bits & bit]


class NvmlError(Exception):
    """An NVML call failed; `status` is one of no_permission, not_supported, no_driver,
    no_library, not_found, error."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


class NvmlUnavailable(NvmlError):
    """NVML cannot be used on this machine at all."""


@dataclass(frozen=True)
class ClockReading:
    sm_mhz: int
    mem_mhz: int
    temperature_c: int
    power_w: float
    reasons: int                    # clock-event reason bits
    power_violation_ns: int         # cumulative time held back by power capping
    thermal_violation_ns: int


class Nvml(Protocol):
    def driver_version(self) -> str: ...
    def handle(self, pci_bus_id: str) -> Any: ...
    def uuid(self, h: Any) -> str: ...
    def name(self, h: Any) -> str: ...
    def mig_enabled(self, h: Any) -> bool: ...
    def read(self, h: Any) -> ClockReading: ...
    def max_clocks(self, h: Any) -> tuple[int, int]: ...          # (sm, mem) MHz
    def base_sm_clock(self, h: Any) -> int: ...                    # default applications clock
    def lock_gpu_clocks(self, h: Any, lo: int, hi: int) -> None: ...
    def reset_gpu_clocks(self, h: Any) -> None: ...
    def lock_memory_clocks(self, h: Any, lo: int, hi: int) -> None: ...
    def reset_memory_clocks(self, h: Any) -> None: ...


def open_nvml() -> "RealNvml":
    try:
        import pynvml
    except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a dependency
        raise NvmlUnavailable("no_library", f"nvidia-ml-py is not importable: {exc}") from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise NvmlUnavailable(*_status(pynvml, exc)) from None
    return RealNvml(pynvml)


def _status(pynvml: Any, exc: Exception) -> tuple[str, str]:
    code = getattr(exc, "value", None)
    table = {pynvml.NVML_ERROR_NO_PERMISSION: "no_permission", pynvml.NVML_ERROR_NOT_SUPPORTED: "not_supported",
             pynvml.NVML_ERROR_LIBRARY_NOT_FOUND: "no_library", pynvml.NVML_ERROR_DRIVER_NOT_LOADED: "no_driver",
             pynvml.NVML_ERROR_NOT_FOUND: "not_found"}
    return table.get(code, "error"), f"NVML: {exc}"


class RealNvml:
    """Thin wrapper over pynvml; every NVMLError becomes an NvmlError with a status."""

    def __init__(self, pynvml: Any):
        self._n = pynvml

    def _call(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self._n, fn)(*args)
        except self._n.NVMLError as exc:
            raise NvmlError(*_status(self._n, exc)) from None

    def driver_version(self) -> str:
        v = self._call("nvmlSystemGetDriverVersion")
        return v.decode() if isinstance(v, bytes) else str(v)

    def handle(self, pci_bus_id: str) -> Any:
        return self._call("nvmlDeviceGetHandleByPciBusId", pci_bus_id)

    def uuid(self, h: Any) -> str:
        v = self._call("nvmlDeviceGetUUID", h)
        return v.decode() if isinstance(v, bytes) else str(v)

    def name(self, h: Any) -> str:
        v = self._call("nvmlDeviceGetName", h)
        return v.decode() if isinstance(v, bytes) else str(v)

    def mig_enabled(self, h: Any) -> bool:
        try:
            current, _pending = self._call("nvmlDeviceGetMigMode", h)
        except NvmlError as exc:
            if exc.status == "not_supported":
                return False
            raise
        return bool(current)

    def read(self, h: Any) -> ClockReading:
        n = self._n
        try:
            reasons = self._call("nvmlDeviceGetCurrentClocksEventReasons", h)
        except NvmlError:
            reasons = self._call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        return ClockReading(
            sm_mhz=self._call("nvmlDeviceGetClockInfo", h, n.NVML_CLOCK_SM),
            mem_mhz=self._call("nvmlDeviceGetClockInfo", h, n.NVML_CLOCK_MEM),
            temperature_c=self._call("nvmlDeviceGetTemperature", h, n.NVML_TEMPERATURE_GPU),
            power_w=self._call("nvmlDeviceGetPowerUsage", h) / 1000.0,
            reasons=int(reasons),
            power_violation_ns=self._violation(h, n.NVML_PERF_POLICY_POWER),
            thermal_violation_ns=self._violation(h, n.NVML_PERF_POLICY_THERMAL))

    def _violation(self, h: Any, policy: int) -> int:
        try:
            return int(self._call("nvmlDeviceGetViolationStatus", h, policy).violationTime)
        except NvmlError:
            return 0

    def max_clocks(self, h: Any) -> tuple[int, int]:
        n = self._n
        return (self._call("nvmlDeviceGetMaxClockInfo", h, n.NVML_CLOCK_SM),
                self._call("nvmlDeviceGetMaxClockInfo", h, n.NVML_CLOCK_MEM))

    def base_sm_clock(self, h: Any) -> int:
        return self._call("nvmlDeviceGetClock", h, self._n.NVML_CLOCK_SM, self._n.NVML_CLOCK_ID_APP_CLOCK_DEFAULT)

    def lock_gpu_clocks(self, h: Any, lo: int, hi: int) -> None:
        self._call("nvmlDeviceSetGpuLockedClocks", h, lo, hi)

    def reset_gpu_clocks(self, h: Any) -> None:
        self._call("nvmlDeviceResetGpuLockedClocks", h)

    def lock_memory_clocks(self, h: Any, lo: int, hi: int) -> None:
        self._call("nvmlDeviceSetMemoryLockedClocks", h, lo, hi)

    def reset_memory_clocks(self, h: Any) -> None:
        self._call("nvmlDeviceResetMemoryLockedClocks", h)
