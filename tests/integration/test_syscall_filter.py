"""The workers' seccomp filter (isolation/sandbox/syscall_filter.py), in a child process: a filter
cannot be taken off the process that installs it."""
import subprocess
import sys

import pytest

from perfbench.isolation.sandbox import syscall_filter

CHILD = """
import ctypes, os, platform, sys
from perfbench.isolation.sandbox.syscall_filter import _NATIVE, deny_syscalls, keyrings_denied, userfaultfd_denied
before = keyrings_denied()
uffd_before = userfaultfd_denied()
installed = deny_syscalls()
libc = ctypes.CDLL(None, use_errno=True)
add_key = _NATIVE[platform.machine()][1][0]
rc = libc.syscall(add_key, b"user", b"perfbench-test-key", b"x", 1, ctypes.c_long(-4))   # the user keyring
add_errno = ctypes.get_errno()
x32 = libc.syscall(0x40000000 | _NATIVE[platform.machine()][1][2], 0, ctypes.c_long(-4), 0)   # keyctl, x32 ABI
x32_errno = ctypes.get_errno()
pid = os.fork()   # inherited by children
if pid == 0:
    os._exit(0 if keyrings_denied() else 1)
_, status = os.waitpid(pid, 0)
print(before, installed, keyrings_denied(), rc, add_errno, os.waitstatus_to_exitcode(status), os.getpid() > 0,
      x32, x32_errno, uffd_before, userfaultfd_denied())
"""


@pytest.mark.skipif(syscall_filter._NATIVE.get(__import__("platform").machine()) is None, reason="no filter for this ABI")
def test_keyrings_and_userfaultfd_are_refused_once_the_filter_is_in_and_in_every_child():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True).stdout.split()
    before, installed, after, rc, errno, child, alive, x32, x32_errno, uffd_before, uffd_after = out
    assert (before, installed, after) == ("False", "True", "True")
    assert (rc, errno) == ("-1", "1")      # add_key: EPERM, nothing added
    assert child == "0" and alive == "True"   # the child has it too; nothing else is refused
    assert (x32, x32_errno) == ("-1", "1")    # the same call by the x32 entry point: refused as well
    assert uffd_after == "True"   # (before: this test's process may be allowed one, as root is)
