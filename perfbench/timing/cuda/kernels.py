"""The three tiny GPU kernels the CUDA timer needs, written in Triton and compiled on first use.

- `hold(flags)`: one thread spins on a host-mapped pinned word until the host writes 1 there
  (released: it writes status 1) or `timeout_ns` of the GPU's global timer pass (status 2).  The
  stream behind it cannot start the timed region before the host has enqueued all of it.
- `window_end()`: does nothing; its name marks the end of a timed window in a profile.
- `clock_probe(out)`: spins for a number of SM cycles and reads the global timer before and
  after: cycles per nanosecond is the SM clock the chip ran at, without NVML permissions.

Triton ships with every CUDA build of torch, so no compiler or CuPy is needed; `load()` is only
ever called on a machine with a CUDA device (importing this module does not touch the GPU).
"""
from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

STATUS_TIMED_OUT = 2   # the hold kernel's status word when no release came (1: released)


@lru_cache(maxsize=1)
def load() -> SimpleNamespace:
    import triton
    import triton.language as tl
    from triton.language.extra.cuda import globaltimer

    @triton.jit
    def _clock64():
        return tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64,
                                         is_pure=False, pack=1)

    @triton.jit
    def perfbench_hold(flags_ptr, timeout_ns):
        # flags_ptr[0]: release word (host writes 1); flags_ptr[1]: status written here.
        t0 = globaltimer()
        now = t0
        seen = tl.load(flags_ptr, volatile=True)
        while (seen == 0) & (now - t0 < timeout_ns):
            seen = tl.load(flags_ptr, volatile=True)
            now = globaltimer()
        tl.store(flags_ptr + 1, tl.where(seen != 0, 1, 2))

    @triton.jit
    def perfbench_window_end(flags_ptr):
        tl.load(flags_ptr + 2)  # touch nothing that matters; the launch is the marker

    @triton.jit
    def perfbench_clock_probe(out_ptr, cycles):
        c0 = _clock64()
        t0 = globaltimer()
        c = c0
        while c - c0 < cycles:
            c = _clock64()
        t1 = globaltimer()
        tl.store(out_ptr, c - c0)
        tl.store(out_ptr + 1, t1 - t0)

    return SimpleNamespace(hold=perfbench_hold, window_end=perfbench_window_end,
                           clock_probe=perfbench_clock_probe)
