"""Clock locking: lock, verify it took, restore only what we changed (finally + signals).

    with ClockLock(nvml, bus_id, ClockRequest(policy="base")) as lock:
        ...  # lock.control says what happened: locked / unlocked (and why) / preexisting / dry_run

A marker file per GPU (pid, uuid, what was locked) lets a later run see a lock whose owner died
and offer `perfbench clocks reset`; a lock another live process holds is left alone.  Nothing
here ever changes power limits, persistence or compute mode.
"""
from __future__ import annotations

import json
import os
import signal
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from ..core.errors import EnvironmentUnavailable, Terminated
from ..system.procfs import pid_alive
from .nvml import CLOCK_LIMIT_TDP, REASON_APP_CLOCKS, Nvml, NvmlError

POLICIES = ("base", "max", "mhz", "none")
VERIFY_TOLERANCE_MHZ = 50


@dataclass(frozen=True)
class ClockRequest:
    policy: str = "base"            # base (TDP clock) | max | mhz | none
    sm_mhz: int | None = None       # for policy "mhz"
    mem_mhz: int | None = None      # also lock the memory clock
    require: bool = False           # refuse to run unlocked
    dry_run: bool = False           # verify mode: read and plan, change nothing

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"clock policy must be one of {'|'.join(POLICIES)}, got {self.policy!r}")
        if self.policy == "mhz" and not self.sm_mhz:
            raise ValueError("clock policy 'mhz' needs sm_mhz")


@dataclass(frozen=True)
class ClockControl:
    """What the result records about clocks."""

    policy: str
    status: str                     # locked | unlocked | preexisting | dry_run | not_requested | unverified
    target_sm_mhz: int | None = None
    measured_sm_mhz: int | None = None
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def locked(self) -> bool:
        return self.status in ("locked", "preexisting")


def marker_dir() -> Path:
    return Path(os.environ.get("PERFBENCH_LOCK_DIR", Path(tempfile.gettempdir()) / "perfbench-clocks"))


def read_marker(uuid: str) -> dict[str, Any] | None:
    p = marker_dir() / f"{uuid}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


class ClockLock:
    def __init__(self, nvml: Nvml | None, pci_bus_id: str | None, request: ClockRequest,
                 warmup: Callable[[], None] | None = None, unavailable_reason: str = "",
                 persistent: bool = False):
        self._nvml = nvml
        self._bus = pci_bus_id
        self.request = request
        self._warmup = warmup
        self._why_none = unavailable_reason or "no NVML"
        self._handle = None
        self._changed: list[str] = []   # "gpu", "mem": what to restore
        self._old_handlers: dict[int, Any] = {}
        self.control = ClockControl(request.policy, "not_requested")
        # persistent (`perfbench clocks lock`): the lock outlives this process; its marker has
        # pid 0 ("held on purpose") and only `perfbench clocks reset` undoes it.
        self._persistent = persistent

    # -- entering ----------------------------------------------------------------------------------
    def __enter__(self) -> "ClockLock":
        self.control = self._acquire()
        if self.request.require and not self.control.locked and self.control.status != "dry_run":
            self.restore()
            raise EnvironmentUnavailable(f"--require-locked-clocks: clocks are {self.control.status} "
                                         f"({self.control.reason})")
        return self

    def _unlocked(self, reason: str, status: str = "unlocked", target: int | None = None) -> ClockControl:
        return ClockControl(self.request.policy, status, target, None, reason)

    def _acquire(self) -> ClockControl:
        req = self.request
        if req.policy == "none":
            return self._unlocked("clock locking not requested (--clocks none)", "not_requested")
        if self._nvml is None or self._bus is None:
            return self._unlocked(self._why_none)
        try:
            h = self._handle = self._nvml.handle(self._bus)
            if self._nvml.mig_enabled(h):
                return self._unlocked("MIG mode is on: clocks belong to the whole GPU, not this instance")
            uuid = self._nvml.uuid(h)
            marker = read_marker(uuid)
            if marker and marker.get("pid") != os.getpid():
                if marker.get("pid") == 0 or pid_alive(int(marker.get("pid", 0))):
                    return self._unlocked(f"another perfbench (pid {marker['pid']}) holds the lock; left alone",
                                          "preexisting")
                return self._unlocked(f"a lock left by a dead perfbench (pid {marker.get('pid')}) is still set; "
                                      "run `perfbench clocks reset`")
            if self._nvml.read(h).reasons & REASON_APP_CLOCKS:
                return self._unlocked("clocks were already set by someone else (applications clocks); left alone",
                                      "preexisting")
            target = self._target(h)
            if req.dry_run:
                return self._unlocked(f"verify mode: would lock SM clock to {target} MHz; changed nothing",
                                      "dry_run", target)
            self._install_signal_handlers()
            lo_hi = (CLOCK_LIMIT_TDP, CLOCK_LIMIT_TDP) if req.policy == "base" else (target, target)
            self._nvml.lock_gpu_clocks(h, *lo_hi)
            self._changed.append("gpu")
            if req.mem_mhz:
                self._nvml.lock_memory_clocks(h, req.mem_mhz, req.mem_mhz)
                self._changed.append("mem")
            self._write_marker(uuid)
            return self._verify(h, target)
        except NvmlError as exc:
            self.restore()
            return self._unlocked(f"{exc.status}: {exc}")

    def _target(self, h: Any) -> int:
        if self.request.policy == "base":
            return self._nvml.base_sm_clock(h)
        if self.request.policy == "max":
            return self._nvml.max_clocks(h)[0]
        return int(self.request.sm_mhz)

    def _verify(self, h: Any, target: int) -> ClockControl:
        if self._warmup is not None:
            self._warmup()  # clocks settle under load, not at idle
        got = self._nvml.read(h).sm_mhz
        if abs(got - target) > VERIFY_TOLERANCE_MHZ:
            return ClockControl(self.request.policy, "unverified", target, got,
                                f"asked for {target} MHz, the GPU runs at {got} MHz after warm-up")
        return ClockControl(self.request.policy, "locked", target, got, "")

    def _write_marker(self, uuid: str) -> None:
        d = marker_dir()
        d.mkdir(parents=True, exist_ok=True)
        pid = 0 if self._persistent else os.getpid()
        (d / f"{uuid}.json").write_text(json.dumps({"pid": pid, "uuid": uuid, "bus": self._bus,
                                                    "changed": self._changed}))
        self._uuid = uuid

    # -- leaving -----------------------------------------------------------------------------------
    def restore(self) -> None:
        """Undo exactly what this lock changed; safe to call twice."""
        h, changed, self._changed = self._handle, self._changed, []
        try:
            if h is not None and "mem" in changed:
                self._nvml.reset_memory_clocks(h)
            if h is not None and "gpu" in changed:
                self._nvml.reset_gpu_clocks(h)
        finally:
            if changed and getattr(self, "_uuid", None):
                try:
                    (marker_dir() / f"{self._uuid}.json").unlink()
                except OSError:
                    pass
            self._restore_signal_handlers()

    def __exit__(self, *exc: Any) -> None:
        if self._persistent and not any(exc):
            self._restore_signal_handlers()  # keep the lock: `perfbench clocks reset` undoes it
            return
        self.restore()

    def _install_signal_handlers(self) -> None:
        def on_signal(signum, frame):
            self.restore()
            raise Terminated(128 + signum) if signum == signal.SIGTERM else KeyboardInterrupt

        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._old_handlers[sig] = signal.signal(sig, on_signal)
            except ValueError:  # not the main thread: rely on finally
                pass

    def _restore_signal_handlers(self) -> None:
        for sig, old in self._old_handlers.items():
            try:
                signal.signal(sig, old)
            except ValueError:
                pass
        self._old_handlers = {}


def reset_stale(nvml: Nvml, pci_bus_id: str) -> str:
    """`perfbench clocks reset`: undo a lock whose perfbench owner died.  Never touches a lock
    a live process holds or one perfbench did not make."""
    h = nvml.handle(pci_bus_id)
    uuid = nvml.uuid(h)
    marker = read_marker(uuid)
    if marker is None:
        return "no perfbench lock recorded for this GPU; nothing changed"
    pid = int(marker.get("pid", 0))
    if pid != 0 and pid_alive(pid):
        return f"perfbench pid {pid} is alive and holds the lock; nothing changed"
    if "mem" in marker.get("changed", []):
        nvml.reset_memory_clocks(h)
    nvml.reset_gpu_clocks(h)
    (marker_dir() / f"{uuid}.json").unlink()
    return f"reset the clocks left locked by dead pid {marker.get('pid')}"
