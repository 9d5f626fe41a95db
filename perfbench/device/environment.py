"""`perfbench env`: can this machine give stable numbers?  Read-only."""
from __future__ import annotations

import os
from typing import Any

from ..system.host import openmp_runtime
from .device_session import describe
from .fingerprint import describe_cpu, host_fingerprint

# What each OpenMP runtime does when OMP_WAIT_POLICY is unset (their documentation).
RUNTIME_DEFAULT_WAIT = {"libgomp": "spin for GOMP_SPINCOUNT=300000 iterations, then sleep",
                        "libiomp5": "spin for KMP_BLOCKTIME=200 ms, then sleep",
                        "libomp": "spin for KMP_BLOCKTIME=200 ms, then sleep"}


def openmp_report() -> dict[str, Any]:
    """The OpenMP runtime torch uses and how its threads wait: in the workers (the task's policy
    or the runtime's default) and in this process."""
    runtime = openmp_runtime()
    return {"runtime": runtime,
            "worker_wait_policy": "the task's [cpu] omp_wait_policy, else the runtime default",
            "runtime_default": RUNTIME_DEFAULT_WAIT.get(runtime.split(",")[0].strip(), "unknown"),
            "spin_count": os.environ.get("GOMP_SPINCOUNT", "300000 (libgomp default)" if "libgomp" in runtime
                                         else "runtime default"),
            "scorer_wait_policy": os.environ.get("OMP_WAIT_POLICY", "runtime default")}


def environment_report(device: str | None = None) -> dict[str, Any]:
    import torch

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    host = host_fingerprint()
    report: dict[str, Any] = {"device": device, "host": host, "openmp": openmp_report(), "problems": []}
    problems = report["problems"]
    if host.get("governor") not in (None, "performance"):
        problems.append(f"CPU governor is {host['governor']!r}, not 'performance': CPU timings drift with load")
    if host.get("turbo"):
        problems.append("CPU turbo is on: clock speed depends on temperature and other cores' load")
    load = host.get("load_average") or [0.0]
    if load[0] > 0.5 * (os.cpu_count() or 1):
        problems.append(f"load average {load[0]:.2f} on {os.cpu_count()} CPUs: other work is running")
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            report["gpu"] = {"nvml": "unavailable", "reason": "no CUDA device"}
            problems.append("no CUDA device: only CPU timing is possible")
        else:
            gpu = describe(device)
            report["gpu"] = gpu
            if gpu.get("nvml") != "ok":
                problems.append(f"GPU clocks cannot be locked or watched: {gpu.get('reason')}")
            elif gpu.get("mig"):
                problems.append("MIG mode: clocks are shared with other instances")
    else:
        report["gpu"] = {"nvml": "not used", "reason": "CPU timing: GPU clocks do not apply"}
    report["verdict"] = ("stable: nothing found that moves timings" if not problems else
                         f"usable with care: {len(problems)} thing(s) can move timings; rely on AB-BA "
                         "pairing and check A/A noise with `perfbench selfcheck`")
    return report


def format_environment(r: dict[str, Any]) -> str:
    h = r["host"]
    lines = [f"{'device':<12} {r['device']}",
             f"{'cpu':<12} {describe_cpu(h)} x{h['cpu_count']} (governor {h.get('governor')}, turbo {h.get('turbo')})",
             f"{'load':<12} {h.get('load_average')}",
             f"{'torch':<12} {h['torch']} ({h['torch_threads']} threads)"]
    omp = r.get("openmp")
    if omp:
        lines.append(f"{'openmp':<12} {omp['runtime']}; workers wait: {omp['worker_wait_policy']} "
                     f"({omp['runtime_default']}); spin count {omp['spin_count']}")
    gpu = r.get("gpu", {})
    if gpu.get("nvml") == "ok":
        lines.append(f"{'gpu':<12} {gpu['name']} driver {gpu['driver']} bus {gpu['pci_bus_id']}")
        lines.append(f"{'clocks':<12} SM {gpu['sm_mhz']} MHz (base {gpu['base_sm_mhz']}, max {gpu['max_sm_mhz']}), "
                     f"mem {gpu['mem_mhz']} MHz, {gpu['temperature_c']} C, {gpu['power_w']:.0f} W, "
                     f"reasons {gpu['reasons'] or 'none'}")
        lines.append(f"{'lock':<12} needs root or unrestricted application clocks; check with "
                     "`perfbench clocks lock --dry-run`")
    else:
        lines.append(f"{'gpu clocks':<12} unlocked: {gpu.get('reason')}")
    for p in r["problems"]:
        lines.append(f"{'note':<12} {p}")
    lines.append(f"{'verdict':<12} {r['verdict']}")
    return "\n".join(lines)
