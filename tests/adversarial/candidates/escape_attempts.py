"""Class 4 (same user as the scorer): try every way out of the sandbox at load time, then behave.

Each attempt prints "attempt NAME: allowed" or "attempt NAME: denied (...)" to the worker log,
which the test reads.  A helper that double-forks, calls setsid and burns the CPU whenever the
kernel is not running is left behind to slow the baseline; the in-worker tripwire that would name
it is switched off first, so only the sandbox stands in its way.
"""
import os
import signal
import socket
import sys
import time

import torch


def attempt(name, fn):
    try:
        fn()
        print(f"attempt {name}: allowed", flush=True)
    except Exception as exc:  # noqa: BLE001
        print(f"attempt {name}: denied ({type(exc).__name__})", flush=True)


def _write_perfbench():
    import perfbench

    with open(perfbench.__file__, "a") as f:
        f.write("\n# owned\n")


def _write_task():
    root = os.environ.get("PB_TEST_TASK_DIR", "")
    with open(os.path.join(root, "baseline.py"), "a") as f:
        f.write("\nimport time; time.sleep(0.001)\n")


def _read_reference():
    root = os.environ.get("PB_TEST_TASK_DIR", "")
    with open(os.path.join(root, "reference.py")) as f:
        if "def reference" not in f.read():
            raise PermissionError("hidden")


def _read_solution(path):
    with open(path) as f:
        if "def " not in f.read():
            raise PermissionError("hidden")


def _solution_from_git():
    # the task's repository keeps every committed file in its objects
    import subprocess

    repo = os.environ.get("PB_TEST_REPO", "")
    out = subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, "show", "HEAD:task/solution.py"],
                         capture_output=True, text=True)
    if out.returncode != 0 or "def " not in out.stdout:
        raise PermissionError(out.stderr.strip()[-60:] or "nothing")


def _solution_compiled():
    # the scorer imported the solution once (validate, calibrate): its bytecode sits beside it
    cache = os.path.join(os.environ.get("PB_TEST_TASK_DIR", ""), "__pycache__")
    if not any(n.startswith("solution.") for n in os.listdir(cache)):
        raise PermissionError("no bytecode")


def _block_devices():
    # a raw disk holds every file's bytes; uid 0 (where the uid cannot switch) opens it by owner permission
    import stat

    disks = [n for n in os.listdir("/dev") if stat.S_ISBLK(os.stat(os.path.join("/dev", n)).st_mode)]
    if not disks:
        raise FileNotFoundError("no block device in /dev")


def _state(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(line.split()[1] for line in f if line.startswith("State:"))


def _signal_others():
    # counted by effect: a process it stopped (a zombie accepts the signal and nothing happens)
    hit = 0
    for e in os.listdir("/proc"):
        if e.isdigit() and int(e) not in (os.getpid(), 1):
            try:
                os.kill(int(e), signal.SIGSTOP)
                time.sleep(0.01)
                hit += _state(e) == "T"
            except (OSError, StopIteration):
                pass
    if hit == 0:
        raise ProcessLookupError("no other process visible")


def _zygote():
    # A forked worker's PID 1 is the zygote it was forked from (isolation/processes/zygote.py), which
    # forks this candidate's later processes; a fresh worker is PID 1 itself.
    if os.getpid() == 1:
        raise ProcessLookupError("no zygote: this worker is PID 1")
    return 1


def _zygote_memory():
    os.open(f"/proc/{_zygote()}/mem", os.O_RDWR)


def _stop_zygote():
    pid = _zygote()
    for sig in (signal.SIGSTOP, signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGHUP):
        try:
            os.kill(pid, sig)
        except OSError:
            pass
    time.sleep(0.05)
    if _state(pid) in ("S", "R"):
        raise PermissionError("the zygote is still serving")


def _steal_zygote_fd():
    # pidfd_getfd: copy the zygote's request channel (or any fd of it) into this process
    import ctypes

    pidfd = os.pidfd_open(_zygote())
    libc = ctypes.CDLL(None, use_errno=True)
    for target in range(3, 16):
        fd = libc.syscall(438, pidfd, target, 0)   # SYS_pidfd_getfd
        if fd >= 0:
            return
    raise PermissionError(os.strerror(ctypes.get_errno()))


def _plant_module():
    # A writable directory on sys.path (the working directory `python -m` puts there is the
    # private directory every process of this candidate shares): a module left there in process
    # 0 would run in process 1's worker code before the candidate loads.
    writable = [d for d in sys.path if d and os.path.isdir(d) and os.access(d, os.W_OK)]
    if not writable:
        raise PermissionError("no writable directory on sys.path")


def _zygote_channel():
    # any socket besides its own request channel could be the zygote's (ask it to fork more)
    socks = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                socks.append(fd)
        except OSError:   # the listing's own fd, closed by now
            pass
    if len(socks) <= 1:
        raise PermissionError(f"{len(socks)} socket")


def _scorer_memory():
    os.open(f"/proc/{os.getppid()}/mem", os.O_RDWR)


def _leave_cgroup():
    for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified", "/sys/fs/cgroup/freezer"):
        with open(os.path.join(root, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))


def _proc_sys():
    # the worker's /proc stays writable (CUDA's cuInit needs it); the kernel's knobs must not be
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def _network():
    socket.create_connection(("127.0.0.1", 22), timeout=0.5)


def _shared_tmp():
    # a file beside the scorer's own temporary files: the test looks for it afterwards
    marker = os.environ.get("PB_TEST_MARKER", "/tmp/perfbench-escape-marker")
    with open(marker, "w") as f:
        f.write("x")


def _read_home():
    # a file in the scorer's home, readable by anyone (the test makes it): hidden, not just closed
    with open(os.environ.get("PB_TEST_HOME_SECRET", os.path.expanduser("~/.bashrc"))) as f:
        f.read()


def _leave_cores():
    # run on every core, e.g. to move off a core the other side is loaded with
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, range(os.cpu_count()))
    if os.sched_getaffinity(0) == before:
        raise PermissionError("still on the same cores")


def _poison_cache():
    # compiled extensions are shared with later runs: leave something there
    with open(os.environ.get("PB_TEST_CACHE_MARKER", os.path.expanduser("~/.cache/perfbench/x")), "w") as f:
        f.write("x")
    print("cache write: went somewhere", flush=True)


for _name, _fn in [("read_home", _read_home), ("leave_cores", _leave_cores), ("write_perfbench", _write_perfbench), ("write_task", _write_task),
                   ("read_reference", _read_reference), ("signal_others", _signal_others),
                   ("scorer_memory", _scorer_memory), ("leave_cgroup", _leave_cgroup),
                   ("network", _network), ("shared_tmp", _shared_tmp),
                   ("solution_from_git", _solution_from_git), ("solution_compiled", _solution_compiled),
                   ("solution_in_another_checkout", lambda: _read_solution(os.environ.get("PB_TEST_OTHER_COPY", ""))),
                   ("block_devices", _block_devices), ("proc_sys", _proc_sys),
                   ("zygote_memory", _zygote_memory), ("stop_zygote", _stop_zygote), ("zygote_channel", _zygote_channel),
                   ("steal_zygote_fd", _steal_zygote_fd), ("plant_module", _plant_module)]:
    attempt(_name, _fn)
try:   # the cache is writable (torch's loader takes a lock there): the test checks where it went
    _poison_cache()
except OSError as _exc:
    print(f"cache write: denied ({type(_exc).__name__})", flush=True)

# Switch the child-process tripwire off, then leave a setsid'ed CPU burner behind.
sys.modules["perfbench.isolation.processes.integrity"]._child_pids = lambda: set()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        end = time.time() + 120
        while time.time() < end:
            pass
        os._exit(0)
    os._exit(0)
os.wait()


def kernel(x, y):
    return torch.add(y, x, alpha=2)
