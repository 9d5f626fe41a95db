"""Where a result was measured: host and device facts, read when asked (never at import)."""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

from ..core.version import __version__


def _first_cpu(cpuinfo: Path) -> dict[str, str]:
    """The first processor's `key : value` lines of /proc/cpuinfo (empty where there is none).
    Read only that far: the kernel writes the file a processor at a time, and on a host with
    hundreds of cores the whole of it costs tens of milliseconds."""
    fields: dict[str, str] = {}
    try:
        with cpuinfo.open() as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                key, sep, value = line.partition(":")
                if sep:
                    fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        return {}
    return fields


def describe_cpu(host: dict[str, Any]) -> str:
    """The host's CPU in one line: name, then family/model/stepping and ISA where known."""
    ids = [f"{label} {host[key]}" for label, key in (("family", "cpu_family"), ("model", "cpu_model_number"),
                                                     ("stepping", "cpu_stepping")) if host.get(key) is not None]
    detail = "; ".join(x for x in (" ".join([host.get("cpu_vendor") or "", *ids]).strip(),
                                   " ".join(host.get("cpu_isa") or ())) if x)
    return f"{host.get('cpu_model', 'unknown')} ({detail})" if detail else str(host.get("cpu_model", "unknown"))


# What a speedup depends on beyond the name: which kernels torch and the compilers dispatch to.
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "sve", "asimd")


def cpu_identity(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """The CPU's name; vendor, family, model and stepping (x86), or implementer and part (ARM);
    and the ISA extensions that change which kernels run.  A hypervisor may show every CPU
    generation as "AMD EPYC": the numbers still tell a Zen 3 from a Zen 5
    (bench_configs.device_key).  One read of /proc/cpuinfo for all of it."""
    f = _first_cpu(cpuinfo)
    def number(key: str) -> int | None:
        v = f.get(key, "")
        try:
            return int(v, 16) if v.lower().startswith("0x") else int(v)
        except ValueError:
            return None
    flags = set((f.get("flags") or f.get("features") or "").split())
    return {"cpu_model": f.get("model name") or platform.processor() or "unknown",
            "cpu_vendor": f.get("vendor_id") or f.get("cpu implementer"),
            "cpu_family": number("cpu family"),
            "cpu_model_number": number("model") if "cpu family" in f else number("cpu part"),
            "cpu_stepping": number("stepping"),
            "cpu_isa": [x for x in ISA_FLAGS if x in flags]}


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
        **cpu_identity(),
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
