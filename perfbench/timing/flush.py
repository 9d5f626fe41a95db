"""Cache flushers: evict the last-level cache before a timed call, outside the timed region.

Without a flush, a kernel re-run on the same (or recently written) data finds it in cache and
looks faster than it will in a real pipeline.  The buffer is sized from the cache actually
present (twice its size), not a fixed 256 MB.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

DEFAULT_LLC_BYTES = 32 << 20  # when the host does not say


def _parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)B?\s*", text.strip(), re.IGNORECASE)
    if not m:
        raise ValueError(f"unrecognised cache size {text!r}")
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2).upper()]


def host_llc_bytes(sysfs: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int:
    """Size of the largest (last-level) cache of cpu0 as Linux reports it, or a default."""
    best = 0
    for size_file in sysfs.glob("index*/size"):
        try:
            best = max(best, _parse_size(size_file.read_text()))
        except (OSError, ValueError):
            continue
    return best or DEFAULT_LLC_BYTES


def cpu_cache_flusher(llc_bytes: int | None = None) -> Callable[[], None]:
    """A callable that streams a buffer twice the LLC size through the cache."""
    import torch

    n = 2 * (llc_bytes or host_llc_bytes()) // 8
    buf = torch.zeros(n, dtype=torch.int64)

    def flush() -> None:
        buf.add_(1)  # read-modify-write every line

    return flush


def cuda_l2_flusher(device: str = "cuda") -> Callable[[], None]:
    """A callable that overwrites a device buffer twice the GPU's L2 size."""
    import torch

    dev = torch.device(device)
    l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0)) or (50 << 20)
    buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device=dev)

    def flush() -> None:
        buf.zero_()

    return flush


def flusher_for(device: str, cache_flush: str) -> Callable[[], None] | None:
    """The flusher a config asks for: 'auto' flushes on CUDA (L2) and not on the CPU."""
    on = cache_flush == "on" or (cache_flush == "auto" and device.startswith("cuda"))
    if not on:
        return None
    return cuda_l2_flusher(device) if device.startswith("cuda") else cpu_cache_flusher()
