"""This machine's peaks, measured (#61): memory bandwidth at working sets from the first cache
level to beyond the last, and FLOP/s from a GEMM per dtype, each with its spread.  Never
changes a clock.  `perfbench peaks` prints them; the speed-of-light bound (core/sol.py) divides
a call's work by them.

Bandwidth is measured three ways, as STREAM does: `read` (a sum: n bytes read), `copy` (n bytes
read and n written) and `triad` (a = b + s*c: 2n read, n written).  A working set that fits a
cache level shows that level's rate; the largest show memory's.  `read` sums the set several
times in one call, so even an L1-sized set is read from L1; `copy` and `triad` are one torch op
per pass, so below a few hundred KiB their figures are bound by the op's per-call cost, not by
the cache (the report's smallest rows say so by reading far below `read`).  Each figure is the median of
`repeats` timings, each long enough (`min_time_s`) to be well above the clock's resolution;
`low` and `high` are the fastest and slowest repeat.
"""
from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterator

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
BANDWIDTH_KINDS = ("read", "copy", "triad")
CPU_GEMM_DTYPES = ("float32", "float64")
CUDA_GEMM_DTYPES = ("float32", "tf32", "bfloat16", "float16")
READ_BYTES_PER_CALL = 8 << 20
GEMM_PROBE_SIZES = (256, 512, 1024, 2048, 4096)   # a score's bound: the fastest of these (CUDA: all)
GEMM_PROBE_CALL_S = 0.02


@dataclass(frozen=True)
class Rate:
    """One measured rate: bytes/s for bandwidth, FLOP/s for a GEMM."""

    kind: str                  # read | copy | triad | gemm
    value: float               # the median repeat
    low: float                 # the slowest repeat's rate
    high: float                # the fastest repeat's rate
    working_set_bytes: int | None = None   # bandwidth: the bytes the kernel touches
    dtype: str | None = None               # gemm: the dtype (tf32: float32 with TF32 matmuls)


@dataclass(frozen=True)
class PeakReport:
    device: str
    threads: int
    caches: dict[str, int]               # L1d, L2, L3 bytes (CPU; CUDA: L2)
    bandwidth: tuple[Rate, ...]
    gemm: tuple[Rate, ...]
    seconds: float
    datasheet: dict = field(default_factory=dict)   # CUDA: what the device's properties say

    def to_dict(self) -> dict:
        return asdict(self)

    def bandwidth_for(self, working_set_bytes: int, kind: str = "copy") -> float:
        """The `kind` rate of the smallest probed working set that holds `working_set_bytes`
        (the level the data fits in); past the largest probe, the largest's (memory's)."""
        rates = sorted((r for r in self.bandwidth if r.kind == kind), key=lambda r: r.working_set_bytes)
        if not rates:
            raise ValueError(f"no {kind} bandwidth was measured")
        return next((r.value for r in rates if r.working_set_bytes >= working_set_bytes), rates[-1].value)

    def fastest_bandwidth(self) -> float:
        return max(r.high for r in self.bandwidth)

    def gemm_rate(self, dtype: str) -> float | None:
        return next((r.value for r in self.gemm if r.dtype == dtype), None)


def cpu_caches(root: Path = CACHE_DIR) -> dict[str, int]:
    """The data caches of cpu0 from sysfs: {"L1d": bytes, "L2": ..., "L3": ...} (empty where
    sysfs does not say)."""
    out = {}
    for index in sorted(root.glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = (index / "size").read_text().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        out[f"L{level}d" if level == "1" else f"L{level}"] = int(size.rstrip("KMG")) * mult
    return out


def working_sets(caches: dict[str, int], quick: bool = False) -> list[int]:
    """Bytes from a quarter of L1 up to 4x the last level, by factors of 4 (quick: every other)."""
    first = caches.get("L1d", 32 << 10) // 4
    last = 4 * max(caches.values(), default=32 << 20)
    sizes, n = [], first
    while n <= last:
        sizes.append(n)
        n *= 16 if quick else 4
    return sizes if sizes[-1] == last or quick else sizes + [last]


def _timed(fn: Callable[[], None], sync: Callable[[], None], min_time_s: float, repeats: int) -> list[float]:
    """Seconds per call of `fn`, `repeats` times, each over enough calls to last min_time_s."""
    fn()
    sync()
    calls, t = 1, 0.0
    while True:   # size the loop
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        t = time.perf_counter() - t0
        if t >= min_time_s or calls >= 1 << 20:
            break
        calls = max(calls * 2, int(calls * min_time_s / max(t, 1e-9)))
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / calls)
    return out


def _rate(kind: str, units: float, seconds: list[float], **where) -> Rate:
    rates = [units / s for s in seconds]
    return Rate(kind, statistics.median(rates), min(rates), max(rates), **where)


def measure_bandwidth(torch, device: str, sizes: list[int], sync: Callable[[], None], min_time_s: float,
                      repeats: int) -> list[Rate]:
    out = []
    for ws in sizes:
        n = max(ws // 4, 16)   # float32 elements that make the working set
        x = torch.ones(n, device=device)
        # One reduction reads the working set `passes` times (a stride-0 view), so a set that
        # fits a cache is read from it and not drowned by the per-call cost of a small op.
        passes = max(1, READ_BYTES_PER_CALL // (4 * n))
        over = x.expand(passes, n) if passes > 1 else x
        out.append(_rate("read", 4 * n * passes, _timed(lambda: over.sum(), sync, min_time_s, repeats),
                         working_set_bytes=ws))
        half = max(n // 2, 16)
        a, b = torch.ones(half, device=device), torch.empty(half, device=device)
        out.append(_rate("copy", 8 * half, _timed(lambda: b.copy_(a), sync, min_time_s, repeats), working_set_bytes=ws))
        third = max(n // 3, 16)
        p, q, r = (torch.ones(third, device=device) for _ in range(3))
        out.append(_rate("triad", 12 * third, _timed(lambda: torch.add(q, r, alpha=3.0, out=p), sync, min_time_s,
                                                     repeats), working_set_bytes=ws))
    return out


def measure_gemm(torch, device: str, dtypes: tuple[str, ...], n: int, sync: Callable[[], None], min_time_s: float,
                 repeats: int) -> list[Rate]:
    out = []
    for name in dtypes:
        dtype = getattr(torch, "float32" if name == "tf32" else name)
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        tf32 = torch.backends.cuda.matmul.allow_tf32 if device.startswith("cuda") else None
        if tf32 is not None:
            torch.backends.cuda.matmul.allow_tf32 = name == "tf32"
        try:
            seconds = _timed(lambda: torch.mm(a, b), sync, min_time_s, repeats)
        finally:
            if tf32 is not None:
                torch.backends.cuda.matmul.allow_tf32 = tf32
        out.append(_rate("gemm", 2.0 * n ** 3, seconds, dtype=name))
    return out


@contextlib.contextmanager
def _measuring(device: str, threads: int) -> Iterator[tuple]:
    """torch with `threads` threads (restored after) and the device's synchronize."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield torch, (lambda: torch.cuda.synchronize(device)) if device.startswith("cuda") else (lambda: None)
    finally:
        torch.set_num_threads(before)


def measure_peaks(device: str = "cpu", threads: int = 1, *, quick: bool = False,
                  say: Callable[[str], None] | None = None) -> PeakReport:
    """Measure this machine's peaks with `threads` torch threads (the task's count)."""
    t0 = time.perf_counter()
    say = say or (lambda msg: None)
    cuda = device.startswith("cuda")
    min_time_s, repeats = (0.005, 3) if quick else (0.02, 7)
    with _measuring(device, threads) as (torch, sync):
        if cuda:
            props = torch.cuda.get_device_properties(device)
            caches = {"L2": int(getattr(props, "L2_cache_size", 0))}
            sizes = [max(caches["L2"], 1 << 20) * 64]   # far past L2: the timer flushes it, so DRAM
            datasheet = {"name": props.name, "sm_count": props.multi_processor_count,
                         "memory_bytes": props.total_memory, "l2_bytes": caches["L2"]}
            dtypes, n = CUDA_GEMM_DTYPES, (2048 if quick else 8192)
        else:
            caches = cpu_caches()
            sizes = working_sets(caches, quick)
            datasheet, dtypes, n = {}, CPU_GEMM_DTYPES, (256 if quick else 1024)
        say(f"bandwidth: {len(sizes)} working sets")
        bandwidth = measure_bandwidth(torch, device, sizes, sync, min_time_s, repeats)
        say(f"GEMM {n}x{n}: {', '.join(dtypes)}")
        gemm = measure_gemm(torch, device, dtypes, n, sync, min_time_s, repeats)
    return PeakReport(device, threads, caches, tuple(bandwidth), tuple(gemm), time.perf_counter() - t0, datasheet)


def _fastest_gemm(torch, device: str, dtype: str, sync: Callable[[], None]) -> Rate:
    """The best GEMM rate over growing square sizes (a bound must not sit below any shape the
    call may use: one size's rate was beaten by an honest fp16 matmul on the CPU), stopping once
    one call takes longer than GEMM_PROBE_CALL_S."""
    best = None
    for n in GEMM_PROBE_SIZES:
        rate = measure_gemm(torch, device, (dtype,), n, sync, 0.01, 3)[0]
        best = rate if best is None or rate.value > best.value else best
        if 2.0 * n ** 3 / rate.value > GEMM_PROBE_CALL_S:
            break
    return best


def bound_peaks(device: str, threads: int, working_set_bytes: int, dtype: str | None,
                memo: dict | None = None) -> dict:
    """The two rates one score's speed-of-light bound needs, measured now (a fraction of a
    second): the bandwidth of the level the call's data comes from, and the GEMM FLOP/s of its
    dtype (`dtype` None: memory-only).  The level: on CUDA the timer flushes L2 before each call,
    so DRAM; on the CPU the scorer has just written the inputs, so the smallest probed working
    set that holds the call's.  The fastest of read, copy and triad there: a bound must not be
    slower than what any access pattern reaches.  `memo` keeps them per level and dtype for the
    rest of one score (a problem's benchmarks often share both)."""
    cuda = device.startswith("cuda")
    with _measuring(device, threads) as (torch, sync):
        # (Never more than 4x the last cache level: past it the rate is memory's whatever the
        # size, and a large call's working set would be allocated three times over.)
        if cuda:
            l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
            ws = 4 * max(l2, 1 << 20)
        else:
            sizes = working_sets(cpu_caches())
            ws = next((s for s in sizes if s >= working_set_bytes), sizes[-1])
        if memo is not None and (ws, dtype) in memo:
            return dict(memo[(ws, dtype)])
        bandwidth = measure_bandwidth(torch, device, [ws], sync, 0.01, 3)
        best = max(bandwidth, key=lambda r: r.value)
        gemm = _fastest_gemm(torch, device, dtype, sync) if dtype else None
    peaks = {"bandwidth_bytes_s": best.value, "bandwidth_kind": best.kind, "working_set_bytes": ws,
             "flop_s": gemm.value if gemm else None, "dtype": dtype,
             "source": "measured in this score" + (" (DRAM: L2 is flushed per call)" if cuda else "")}
    if memo is not None:
        memo[(ws, dtype)] = dict(peaks)
    return peaks
