"""Everything about the measuring device for one run: NVML (if any), the clock lock, the monitor.

    with device_session("cuda:0", ClockRequest("base")) as dev:
        ... sample_pairs(..., monitor=dev.monitor); dev.control  # recorded in the result

On the CPU, or without a usable NVML, the session is inert and says why in `control`.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from .clocks import ClockControl, ClockLock, ClockRequest
from .monitor import Monitor
from .nvml import Nvml, NvmlUnavailable, open_nvml


@dataclass
class DeviceSession:
    control: ClockControl
    monitor: Monitor | None


def cuda_pci_bus_id(device: str) -> str | None:
    import torch

    props = torch.cuda.get_device_properties(torch.device(device))
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    dom = getattr(props, "pci_domain_id", 0)
    dev = getattr(props, "pci_device_id", 0)
    return f"{dom:08x}:{bus:02x}:{dev:02x}.0"


def gpu_warmup(device: str, seconds: float = 0.5) -> Callable[[], None]:
    def run() -> None:
        import torch

        a = torch.randn(2048, 2048, device=device)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            a = torch.tanh(a @ a)
        torch.cuda.synchronize(device)
    return run


def connect(device: str, nvml_factory: Callable[[], Nvml] | None = None) -> tuple[Nvml | None, str | None, str]:
    """(nvml, pci bus id, reason if unavailable)."""
    if not device.startswith("cuda"):
        return None, None, "CPU timing: GPU clocks do not apply"
    try:
        nvml = (nvml_factory or open_nvml)()
    except NvmlUnavailable as exc:
        return None, None, f"{exc.status}: {exc}"
    bus = cuda_pci_bus_id(device)
    if bus is None:
        return None, None, "torch does not report this GPU's PCI bus id; cannot match it to NVML safely"
    return nvml, bus, ""


@contextlib.contextmanager
def device_session(device: str, request: ClockRequest,
                   nvml_factory: Callable[[], Nvml] | None = None) -> Iterator[DeviceSession]:
    nvml, bus, why = connect(device, nvml_factory)
    if not device.startswith("cuda"):
        yield DeviceSession(ClockControl(request.policy, "not_applicable", reason=why), None)
        return
    with ClockLock(nvml, bus, request, warmup=gpu_warmup(device), unavailable_reason=why) as lock:
        monitor = Monitor(nvml, nvml.handle(bus)) if nvml is not None and bus is not None else None
        yield DeviceSession(lock.control, monitor)


def describe(device: str, nvml_factory: Callable[[], Nvml] | None = None) -> dict[str, Any]:
    """Read-only facts for `perfbench env` / `clocks show`: never changes anything."""
    nvml, bus, why = connect(device, nvml_factory)
    if nvml is None:
        return {"device": device, "nvml": "unavailable", "reason": why}
    h = nvml.handle(bus)
    r = nvml.read(h)
    from .nvml import reason_names

    return {"device": device, "nvml": "ok", "driver": nvml.driver_version(), "name": nvml.name(h),
            "uuid": nvml.uuid(h), "pci_bus_id": bus, "mig": nvml.mig_enabled(h),
            "sm_mhz": r.sm_mhz, "mem_mhz": r.mem_mhz, "max_sm_mhz": nvml.max_clocks(h)[0],
            "max_mem_mhz": nvml.max_clocks(h)[1], "base_sm_mhz": nvml.base_sm_clock(h),
            "temperature_c": r.temperature_c, "power_w": r.power_w, "reasons": reason_names(r.reasons)}
