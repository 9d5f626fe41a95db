"""Where a result was measured: host and device facts, read when asked (never at import)."""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from .. import __version__


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_frequency_policy() -> dict[str, Any]:
    """Governor and turbo state: a 'powersave' governor or turbo makes CPU timings drift."""
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    turbo = None if no_turbo is None and boost is None else (no_turbo == "0" if no_turbo is not None else boost == "1")
    return {"governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"), "turbo": turbo}


def host_fingerprint() -> dict[str, Any]:
    import numpy
    import torch

    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {
        "hostname": platform.node(),
        "os": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average": load,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "torch_threads": torch.get_num_threads(),
        **cpu_frequency_policy(),
        "perfbench": __version__,
    }


def cuda_fingerprint(device: str) -> dict[str, Any]:
    import torch

    dev = torch.device(device)
    props = torch.cuda.get_device_properties(dev)
    return {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "total_memory": props.total_memory,
        "l2_cache_bytes": getattr(props, "L2_cache_size", None),
        "sm_count": props.multi_processor_count,
        "cuda_runtime": torch.version.cuda,
    }


def fingerprint(device: str) -> dict[str, Any]:
    record: dict[str, Any] = {"host": host_fingerprint()}
    if device.startswith("cuda"):
        record["cuda"] = cuda_fingerprint(device)
    return record
