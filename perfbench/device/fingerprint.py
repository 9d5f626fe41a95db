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
