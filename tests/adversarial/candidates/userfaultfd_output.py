"""Returns, once timed, an output in a page registered with userfaultfd and never served (#39):
the scorer's read of the frozen worker's memory then blocks for good.  Workers' seccomp filter
refuses userfaultfd, so it logs the refusal and stays honest (scored); were the call allowed, the
read's deadline would reject it (tamper.protocol).  x86_64 only (its syscall number)."""
import ctypes
import mmap
import struct
import sys

import torch

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_calls = 0
_trap = None


def _registered_page(nbytes: int):
    fd = _libc.syscall(323, 0o2004000)   # userfaultfd(O_CLOEXEC | O_NONBLOCK)
    if fd < 0:
        print(f"userfaultfd: errno {ctypes.get_errno()}", file=sys.stderr, flush=True)
        return None
    page = mmap.mmap(-1, max(4096, nbytes))
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    _libc.ioctl(fd, ctypes.c_ulong(0xC018AA3F), ctypes.create_string_buffer(struct.pack("QQQ", 0xAA, 0, 0)))
    _libc.madvise(ctypes.c_void_p(address), ctypes.c_size_t(len(page)), 4)   # MADV_DONTNEED
    _libc.ioctl(fd, ctypes.c_ulong(0xC020AA00),
                ctypes.create_string_buffer(struct.pack("QQQQ", address, len(page), 1, 0)))
    print("userfaultfd: registered", file=sys.stderr, flush=True)
    return torch.frombuffer(page, dtype=torch.uint8), (fd, page)


def kernel(x, y):
    global _calls, _trap
    _calls += 1
    out = torch.add(y, x, alpha=2)
    if _calls == 21:   # the first timed call (the gate makes 12, its input contract 8)
        _trap = _registered_page(out.numel() * out.element_size())
    if _trap is not None:
        return _trap[0][:out.numel() * out.element_size()].view(out.dtype)
    return out
