"""Throttle detection that needs no NVML permission: the SM clock a probe kernel read.

After each timed CUDA block the worker runs `perfbench_clock_probe` (timing/cuda/kernels.py):
cycles counted by `clock64` over nanoseconds of `%globaltimer` is the SM clock the chip ran at.
`ProbedMonitor` wraps the NVML monitor (when there is one) for the sampler: a block is throttled
when NVML says so or when its probe read below THROTTLE_SHARE of the reference clock (the locked
clock, else the fastest probe of the run so far), and the sampler re-measures its pair.  Only the
baseline's worker records probes (the candidate's process could claim any clock); the clock is
the device's, so the baseline's block of each pair speaks for the pair.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A block whose probed SM clock is under this share of the reference clock ran throttled
# (nvbench drops samples below 75% of the nominal clock).
THROTTLE_SHARE = 0.75


def probe_throttled(mhz: float | None, reference_mhz: float | None) -> bool:
    if mhz is None or not reference_mhz:
        return False
    return mhz < THROTTLE_SHARE * reference_mhz


class ClockProbeReadings:
    """Where the sides put each block's probe (written by WorkerSide, read by ProbedMonitor)."""

    def __init__(self) -> None:
        self.last_mhz: float | None = None
        self.fastest_mhz: float | None = None

    def record(self, mhz: float | None) -> None:
        self.last_mhz = mhz
        if mhz is not None and (self.fastest_mhz is None or mhz > self.fastest_mhz):
            self.fastest_mhz = mhz


@dataclass(frozen=True)
class ProbedConditions:
    nvml: Any | None            # device.monitor.BlockConditions, or None without NVML
    probe_mhz: float | None
    reference_mhz: float | None

    @property
    def probe_throttled(self) -> bool:
        return probe_throttled(self.probe_mhz, self.reference_mhz)

    @property
    def throttled(self) -> bool:
        return self.probe_throttled or bool(self.nvml is not None and self.nvml.throttled)

    def to_dict(self) -> dict[str, Any]:
        out = self.nvml.to_dict() if self.nvml is not None else {}
        return dict(out, probe_sm_mhz=None if self.probe_mhz is None else round(self.probe_mhz, 1),
                    probe_reference_mhz=None if self.reference_mhz is None else round(self.reference_mhz, 1),
                    probe_throttled=self.probe_throttled, throttled=self.throttled)


class ProbedMonitor:
    def __init__(self, nvml_monitor: Any | None, readings: ClockProbeReadings, locked_mhz: float | None = None):
        self._inner = nvml_monitor
        self._readings = readings
        self._locked_mhz = locked_mhz

    def begin(self) -> None:
        self._readings.last_mhz = None
        if self._inner is not None:
            self._inner.begin()

    def end(self) -> ProbedConditions:
        nvml = self._inner.end() if self._inner is not None else None
        reference = self._locked_mhz or self._readings.fastest_mhz
        return ProbedConditions(nvml, self._readings.last_mhz, reference)
