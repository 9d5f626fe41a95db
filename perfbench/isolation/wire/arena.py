"""Shared memory between the scorer and a worker, and the layouts written into it.

Two arenas per worker (CPU timing protocol, docs/security.md):
- the *input arena*: the scorer writes a block's inputs here while the worker is frozen, so the
  worker sees them only once its timed request has started;
- the *output table*: inside the timed request the worker writes, per iteration, where each
  output lives in its memory (address, dtype, shape, strides).  After the reply the scorer
  freezes the worker and reads the chosen output's bytes from the worker's memory itself
  (`read_process_memory`): nothing the worker does after replying can change them.

Both are memfds created by the scorer and inherited by the worker; sparse, so an arena sized for
the largest block costs memory only for the pages written.  The worker holds them read-write, so
both are sealed against shrinking (and against further seals) before it starts: a candidate that
truncated one made the scorer's next access to its own mapping die of SIGBUS (#39).  Growing stays
allowed, as the scorer grows them for larger blocks; a candidate that grows one only spends memory
its own cgroup is charged for.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import math
import mmap
import os
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ...system import host
from ...core.score_key import in_page_draw

MAX_DIMS = 8
# One output-table record: kind, data_ptr, dtype code, ndim, shape[MAX_DIMS], strides[MAX_DIMS].
RECORD_INTS = 4 + 2 * MAX_DIMS
# KIND_STRUCTURE: the call returned another number of outputs (the count is in the address field).
# KIND_EXPECTED: an exact, contiguous CPU tensor of the expected dtype and shape; only its
# address is recorded (the common case, kept cheap because it is inside the timed window).
# KIND_DEVICE: an exact, strided tensor on another device than the CPU (meta, cuda, ...): its
# dtype, shape and strides, and in the address field the index of its device type in DEVICES.
KIND_MISSING, KIND_TENSOR, KIND_OTHER, KIND_TOO_MANY_DIMS, KIND_STRUCTURE, KIND_EXPECTED, KIND_DEVICE = range(7)
DEVICES = ("meta", "cuda", "other")
DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
          torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)
DTYPE_CODE = {d: i for i, d in enumerate(DTYPES)}


class SharedArena:
    """A memfd mapped in this process; the worker maps the same fd."""

    def __init__(self, name: str):
        self.fd = os.memfd_create(f"perfbench-{name}", os.MFD_ALLOW_SEALING)   # inheritable only through pass_fds
        # F_SEAL_SEAL too: the worker could otherwise add F_SEAL_GROW, and the scorer's next
        # resize would fail.
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
        self.size = 0
        self._map: mmap.mmap | None = None

    def resize(self, nbytes: int) -> None:
        """Grow to at least `nbytes` (never shrinks: a worker may still index the old extent)."""
        nbytes = max(mmap.PAGESIZE, -(-int(nbytes) // mmap.PAGESIZE) * mmap.PAGESIZE, self.size)
        if nbytes == self.size:
            return
        if self._map is not None:
            self._map.close()
        if os.fstat(self.fd).st_size < nbytes:   # (the worker may have grown it; it cannot shrink)
            os.ftruncate(self.fd, nbytes)
        self._map = mmap.mmap(self.fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.size = nbytes

    def view(self) -> memoryview:
        if self._map is None:
            raise RuntimeError("arena not sized yet")
        return memoryview(self._map)

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
        try:
            os.close(self.fd)
        except OSError:
            pass


ARG_ALIGN = 64          # bytes: every argument's alignment in the arena, as the CPU allocator's
IN_PAGE_SPAN = 4096     # a timed block's first argument starts below this (in_page_start)


@dataclass(frozen=True)
class InputSlot:
    """One argument of one call: a tensor at `offset` in the iteration's slice, or a constant."""

    offset: int
    dtype: str
    shape: tuple[int, ...]
    const: Any = None          # non-tensor arguments (ints, floats) travel as JSON

    @property
    def is_tensor(self) -> bool:
        return self.dtype != ""

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "dtype": self.dtype, "shape": list(self.shape), "const": self.const}


@dataclass(frozen=True)
class InputLayout:
    """Where the arguments of iteration k live: iteration k's slice starts at k * stride."""

    slots: tuple[InputSlot, ...]
    stride: int

    @classmethod
    def of(cls, inputs: tuple) -> "InputLayout":
        slots, off = [], 0
        for x in inputs:
            if type(x) is torch.Tensor:
                nbytes = x.numel() * x.element_size()
                slots.append(InputSlot(off, str(x.dtype).replace("torch.", ""), tuple(x.shape)))
                off += -(-nbytes // ARG_ALIGN) * ARG_ALIGN   # aligned like the CPU allocator's
            elif x is None or isinstance(x, (bool, int, float, str)):
                slots.append(InputSlot(0, "", (), x))
            else:
                raise TypeError(f"input of type {type(x).__name__} cannot be handed to a worker")
        return cls(tuple(slots), max(ARG_ALIGN, off))

    def to_dict(self) -> dict[str, Any]:
        return {"slots": [s.to_dict() for s in self.slots], "stride": self.stride}

    def read(self, arena: SharedArena, base: int) -> list[torch.Tensor | Any]:
        """The arguments laid out at `base`, as they are in the arena now (copies)."""
        u8 = torch.frombuffer(bytearray(arena.view()[base:base + self.stride]), dtype=torch.uint8)
        return list(_arguments(u8, {"base": 0, **self.to_dict()}))


def _arguments(u8: torch.Tensor, layout: dict[str, Any]) -> tuple:
    """One call's arguments: views of `u8` (a uint8 tensor over an arena) at the layout's slots."""
    args = []
    for s in layout["slots"]:
        if not s["dtype"]:
            args.append(s["const"])
            continue
        dtype = getattr(torch, s["dtype"])
        start = layout["base"] + s["offset"]
        args.append(u8[start:start + math.prod(s["shape"]) * dtype.itemsize].view(dtype).view(s["shape"]))
    return tuple(args)


def in_page_start(seed: int) -> int:
    """Where a timed block's arguments start in the input arena: a multiple of 64 below 4096,
    drawn from the block's seed (both blocks of a pair share it).

    Why (#38): the offset within a page between a kernel's input and its outputs and
    temporaries decides how often its loads alias its recent stores (on x86, addresses equal
    modulo 4096 stall a load behind the store).  Those buffers come from the worker's heap at
    whatever offsets it settles on; inputs always started on a page boundary, so every kernel
    was timed at one point of that effect, a bad one for row_softmax's five-pass baseline (~10%
    slower than at drawn offsets, the fused solution ~2%).  Drawn per block, a score measures
    the average over offsets, as a program's tensors from its allocator see it."""
    draws = IN_PAGE_SPAN // ARG_ALIGN
    return ARG_ALIGN * in_page_draw(seed, draws)


def staged_arguments(u8: torch.Tensor, spec: dict[str, Any]) -> list[tuple]:
    """Every call's arguments for a block, from `BlockLayout.to_dict()` (the worker's side)."""
    if "uniform" in spec:
        u, start = spec["uniform"], spec.get("start", 0)
        return [_arguments(u8, dict(u, base=start + k * u["stride"])) for k in range(spec["iters"])]
    return [_arguments(u8, layout) for layout in spec["each"]]


@dataclass(frozen=True)
class BlockLayout:
    """Where every call of a block finds its arguments: iteration k's at bases[k].

    Tasks whose inputs change shape from seed to seed (a sparse matrix's nnz) get one layout per
    iteration; the usual fixed-shape task one, sent once (`uniform`)."""

    bases: tuple[int, ...]
    layouts: tuple[InputLayout, ...]

    @classmethod
    def of(cls, block: list[tuple], start: int = 0) -> "BlockLayout":
        """`start`: the byte offset of the first call's arguments (a multiple of ARG_ALIGN)."""
        if start < 0 or start % ARG_ALIGN:
            raise ValueError(f"start must be a non-negative multiple of {ARG_ALIGN}, got {start}")
        layouts = [InputLayout.of(args) for args in block]
        if layouts and all(x == layouts[0] for x in layouts):
            layouts = [layouts[0]] * len(layouts)
        bases, off = [], start
        for lay in layouts:
            bases.append(off)
            off += lay.stride
        return cls(tuple(bases), tuple(layouts))

    @property
    def nbytes(self) -> int:
        return self.bases[-1] + self.layouts[-1].stride if self.bases else 0

    @property
    def uniform(self) -> bool:
        return all(x is self.layouts[0] for x in self.layouts)

    def to_dict(self) -> dict[str, Any]:
        if self.uniform:
            return {"uniform": self.layouts[0].to_dict(), "iters": len(self.bases), "start": self.bases[0]}
        return {"each": [dict(lay.to_dict(), base=b) for b, lay in zip(self.bases, self.layouts)]}

    def read(self, arena: SharedArena, k: int) -> list[torch.Tensor | Any]:
        return self.layouts[k].read(arena, self.bases[k])

    def write(self, arena: SharedArena, block: list[tuple]) -> None:
        """The block's tensor arguments into the arena, each at its slot."""
        dst = np.frombuffer(arena.view(), dtype=np.uint8)
        for base, layout, args in zip(self.bases, self.layouts, block):
            for slot, x in zip(layout.slots, args):
                if slot.is_tensor and x.numel():
                    src = x.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
                    dst[base + slot.offset:base + slot.offset + src.size] = src


def describe_outputs(table: np.ndarray, outputs: list, expected: list[tuple]) -> None:
    """The worker's side of the output table: each call's outputs (`outputs[k]`, a tensor or a
    tuple) as records, row k * len(expected) + j for output j.  `expected`: (dtype, shape) of each
    output at the timed size.  Inside the timed window, so the common case (an exact,
    contiguous CPU tensor of the expected dtype and shape) costs one data_ptr() and one bulk
    write; the scorer reads the rest back with `table_records`."""
    n_out = len(expected)
    ptrs, odd = [], []
    for k, out in enumerate(outputs):
        outs = out if type(out) is tuple else (out,)
        if len(outs) != n_out:
            odd.append((k * n_out, None, len(outs)))
            ptrs.extend([0] * n_out)
            continue
        for j, t in enumerate(outs):
            if type(t) is torch.Tensor and (t.dtype, t.shape) == expected[j] and t.is_contiguous() \
                    and t.device.type == "cpu":
                ptrs.append(t.data_ptr())
            else:
                ptrs.append(0)
                odd.append((k * n_out + j, t, 0))
    m = len(ptrs)
    table[:m, 0] = KIND_EXPECTED
    table[:m, 1] = ptrs
    for row, t, count in odd:
        if t is None:
            table[row:row + n_out, 0] = KIND_STRUCTURE
            table[row, 1] = count
        elif type(t) is not torch.Tensor or t.layout != torch.strided:
            table[row, 0] = KIND_OTHER   # (a sparse tensor has no data_ptr to read)
        elif t.dim() > MAX_DIMS:
            table[row, 0] = KIND_TOO_MANY_DIMS
        else:
            nd, r = t.dim(), table[row]
            if t.device.type == "cpu":
                r[0], r[1] = KIND_TENSOR, t.data_ptr()
            else:   # no address the scorer could read: the device, for correctness.device
                r[0], r[1] = KIND_DEVICE, DEVICES.index(t.device.type) if t.device.type in DEVICES else len(DEVICES) - 1
            r[2], r[3] = DTYPE_CODE.get(t.dtype, -1), nd
            r[4:4 + nd] = t.shape
            r[4 + MAX_DIMS:4 + MAX_DIMS + nd] = t.stride()


def table_bytes(iters: int, n_outputs: int) -> int:
    return iters * max(1, n_outputs) * RECORD_INTS * 8


def table_records(arena: SharedArena, k: int, n_outputs: int) -> np.ndarray:
    """The output-table records of iteration k (a copy): shape (n_outputs, RECORD_INTS)."""
    width = max(1, n_outputs) * RECORD_INTS
    a = np.frombuffer(arena.view(), dtype=np.int64, count=width, offset=k * width * 8)
    return a.reshape(max(1, n_outputs), RECORD_INTS).copy()


class MemoryReadTimeout(TimeoutError):
    """A read of a worker's memory that did not complete in time (it is still blocked)."""


def read_process_memory(pid: int, address: int, nbytes: int, timeout_s: float | None = None) -> torch.Tensor:
    """`nbytes` at `address` in process `pid` (which must be stopped for the read to mean
    anything), as a new uint8 tensor.  Needs ptrace access: the scorer is the worker's ancestor
    and, here, root.

    With `timeout_s`, a read that has not completed by then raises `MemoryReadTimeout`.  A page
    the worker registered with userfaultfd blocks the read until someone serves the fault, and a
    frozen worker never does (#39: measured, the read hung until the worker was killed).  The
    read then runs on a thread, left blocked: the caller kills the worker, which ends it.
    Workers cannot make such pages (syscall_filter.py refuses userfaultfd); this is the backstop.
    """
    if timeout_s is None:
        return _read(pid, address, nbytes)
    result: list = []

    def read() -> None:
        try:
            result.append(_read(pid, address, nbytes))
        except Exception as exc:  # noqa: BLE001 - raised again in the caller's thread
            result.append(exc)

    reader = threading.Thread(target=read, name="perfbench-memory-read", daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not result:
        raise MemoryReadTimeout(f"reading {nbytes} bytes at {address:#x} took over {timeout_s:g} s")
    if isinstance(result[0], Exception):
        raise result[0]
    return result[0]


def _read(pid: int, address: int, nbytes: int) -> torch.Tensor:
    """read_process_memory without a deadline.

    process_vm_readv(2) copies straight into the tensor: 3.0 ms for 16 MB on the Intel host,
    against 6.7 ms for pread of /proc/PID/mem and two more copies to make a tensor of its bytes
    (every timed-output check reads one output).  Both need the same ptrace permission; the
    /proc read remains where the call is missing or refused."""
    out = torch.empty(nbytes, dtype=torch.uint8)
    if nbytes == 0:
        return out
    got = _vm_read(pid, address, out)
    if got is None:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        try:
            got = os.preadv(fd, [out.numpy()], address)
        finally:
            os.close(fd)
    if got != nbytes:
        raise OSError(f"short read: {got} of {nbytes} bytes at {address:#x}")
    return out


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _process_vm_readv():
    return host.function("process_vm_readv", (ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong,
                                              ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.c_ulong), ctypes.c_ssize_t)


def _vm_read(pid: int, address: int, out: torch.Tensor) -> int | None:
    """Bytes read into `out` by process_vm_readv, or None where it is unavailable or refused."""
    fn = _process_vm_readv()
    if fn is None:
        return None
    local, remote = _Iovec(out.data_ptr(), out.numel()), _Iovec(address, out.numel())
    got = fn(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if got >= 0:
        return got
    err = host.errno()
    if err in (errno.ENOSYS, errno.EPERM):
        return None
    raise OSError(err, f"process_vm_readv at {address:#x}: {os.strerror(err)}")
