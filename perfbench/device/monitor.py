"""Per-block GPU conditions: clocks, temperature, power, throttle reasons, violation counters."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .nvml import THROTTLE_MASK, ClockReading, Nvml, reason_names


@dataclass(frozen=True)
class BlockConditions:
    sm_mhz: int
    mem_mhz: int
    temperature_c: int
    power_w: float
    reasons: int                      # OR of the reason bits seen at block start and end
    power_violation_ns: int           # increase over the block
    thermal_violation_ns: int

    @property
    def throttled(self) -> bool:
        return bool(self.reasons & THROTTLE_MASK) or self.power_violation_ns > 0 or self.thermal_violation_ns > 0

    def to_dict(self) -> dict[str, Any]:
        return dict(asdict(self), throttled=self.throttled, reason_names=reason_names(self.reasons))


class Monitor:
    """`begin()` before a block, `end()` after: the block's conditions."""

    def __init__(self, nvml: Nvml, handle: Any):
        self._nvml = nvml
        self._h = handle
        self._start: ClockReading | None = None

    def begin(self) -> None:
        self._start = self._nvml.read(self._h)

    def end(self) -> BlockConditions:
        a, b = self._start or self._nvml.read(self._h), self._nvml.read(self._h)
        return BlockConditions(sm_mhz=min(a.sm_mhz, b.sm_mhz), mem_mhz=min(a.mem_mhz, b.mem_mhz),
                               temperature_c=max(a.temperature_c, b.temperature_c),
                               power_w=max(a.power_w, b.power_w), reasons=a.reasons | b.reasons,
                               power_violation_ns=max(0, b.power_violation_ns - a.power_violation_ns),
                               thermal_violation_ns=max(0, b.thermal_violation_ns - a.thermal_violation_ns))
