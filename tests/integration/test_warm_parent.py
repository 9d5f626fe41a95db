"""The warm parent (isolation/processes/warm_parent.py, warm_parent_handle.py): a zygote it forks into a sandbox
has what a spawned zygote has (credentials, capability sets, environment, PID 1 of its own
namespace), a zygote it cannot sandbox is spawned instead and says so, and nothing it started
outlives `close`."""
import json
import os
import time
from pathlib import Path

import pytest

from perfbench.system.procfs import pid_alive
from perfbench.isolation.processes.cpu_threads import CpuThreading
from perfbench.isolation.processes.warm_parent_handle import WarmParent, WarmParents
from perfbench.isolation.processes.worker_client import WorkerClient
from perfbench.isolation.processes.fork_server import ForkServer
from perfbench.isolation.sandbox.plan import SandboxPlan
from perfbench.pipeline.config import ScoreConfig
from perfbench.pipeline.gate import load_side
from perfbench.task.spec import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

THREADS = CpuThreading.for_task(1)
CREDENTIALS = ("Uid", "Gid", "Groups", "NoNewPrivs", "Seccomp", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")


def _status(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/status") as f:
        return {k: v.strip() for k, v in (line.split(":", 1) for line in f if ":" in line)}


# Loaded as a candidate: writes what its worker's process sees of its environment, then serves.
REPORTER = """import json, os, sys, tempfile
import torch
print("seen: " + json.dumps({"env": dict(os.environ), "tempdir": tempfile.gettempdir(), "cwd": os.getcwd(),
               "dont_write_bytecode": sys.dont_write_bytecode, "threads": torch.get_num_threads(),
               "path": [p for p in sys.path if p.startswith(os.environ["TMPDIR"])]}), file=sys.stderr, flush=True)
def kernel(x, y):
    return torch.add(y, x, alpha=2)
"""


def _what_a_worker_sees(server: ForkServer, reporter: Path) -> dict:
    spec = load_task(FIXTURES / "tiny_task")
    with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
        assert w.start(30).complete
        load_side(w, spec, "cpu", reporter, ScoreConfig(), 1, 2)
        [line] = [x for x in w.log_tail().splitlines() if x.startswith("seen: ")]
    # (through its log: its private directory is a tmpfs of its own, not visible from here)
    private = server.plan.private_dir
    seen = json.loads(line[len("seen: "):].replace(private, "<private>"))
    seen["env"].pop("PERFBENCH_CPUS")   # the lease's cores, which tests may not share
    return seen


@pytest.fixture(scope="module")
def warm_parent():
    with WarmParent(THREADS) as parent:
        yield parent


def test_a_warm_zygote_has_a_spawned_zygotes_credentials_and_environment(warm_parent, tmp_path, sandboxable):
    """Read from the host (/proc status of the zygote) and from inside (a candidate that reports
    its worker's environment, temp directory, working directory and thread count)."""
    reporter = tmp_path / "reporter.py"
    reporter.write_text(REPORTER)
    expose = (str(reporter), str(FIXTURES / "tiny_task"))
    seen = {}
    for source, parent in (("spawned", None), ("warm parent", warm_parent)):
        with ForkServer("candidate", untrusted=True, threading=THREADS, parent=parent, expose=expose) as server:
            server.start(120)
            assert server.source == source
            status = _status(server.zygote_pid)
            seen[source] = ({k: status[k] for k in CREDENTIALS}, status["NSpid"].split()[-1],
                            _what_a_worker_sees(server, reporter))
    spawned, warm = seen["spawned"], seen["warm parent"]
    assert warm == spawned
    creds, ns_pid, inside = warm
    assert ns_pid == "1"   # init of its own PID namespace
    assert all(int(creds[k], 16) == 0 for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")), creds
    assert creds["NoNewPrivs"] == "1" and creds["Uid"].split()[0] != "0" and creds["Groups"] == ""
    assert inside["tempdir"] == inside["cwd"] == inside["env"]["TMPDIR"] == "<private>"
    assert inside["dont_write_bytecode"] and inside["threads"] == 1 and inside["path"] == []


def test_a_zygote_the_warm_parent_cannot_sandbox_is_spawned_instead(warm_parent, monkeypatch, sandboxable):
    """A step of the in-process entry fails: no zygote comes of it (the child exits before any
    worker), the zygote is spawned as without a warm parent, and `source` says why."""
    real = SandboxPlan.view_script
    monkeypatch.setattr(SandboxPlan, "view_script", lambda self, view: "exit 3\n")
    server = ForkServer("candidate", untrusted=True, threading=THREADS, parent=warm_parent)
    monkeypatch.setattr(SandboxPlan, "view_script", real)   # the spawned fallback builds the real view
    with server:
        server.start(120)
        assert server.source.startswith("spawned (the warm parent failed") and "exited 3" in server.source
        with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
            assert w.start(30).complete


def test_nothing_it_started_outlives_close():
    with WarmParent(THREADS) as parent:
        with ForkServer("candidate", untrusted=True, threading=THREADS, parent=parent) as server:
            server.start(120)
            with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
                w.start(30)
                pids = [parent.proc.pid, server.proc.pid, server.zygote_pid, w.worker_pid]
        assert parent.proc.poll() is None   # serves on after its zygote is gone
    deadline = time.monotonic() + 10
    while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if pid_alive(p)] == []


def test_warm_parents_are_kept_per_openmp_setting():
    """One per runtime setting, whatever the cores.  With two threads numpy's OpenBLAS starts a
    thread at import: the warm parent still forks its zygotes (it stops that pool first)."""
    parents = WarmParents()
    two = CpuThreading(2, (0,))
    try:
        one = parents.get(CpuThreading(1, (0,)))
        assert parents.get(CpuThreading(1, (os.cpu_count() - 1,))) is one   # other cores: the same runtime
        assert one.suits(THREADS) and not one.suits(CpuThreading(1, (0,), "active")) and not one.suits(two)
        with ForkServer("baseline", untrusted=False, threading=two, parent=parents.get(two)) as server:
            server.start(120)
            assert server.source == "warm parent"
        assert WarmParents.shared() is WarmParents.shared()
    finally:
        parents.close()
    assert one.proc.poll() is not None


def test_scores_on_two_threads_share_one_warm_parent(warm_parent):
    """Each thread gets its own zygote's answer, whichever thread reads the replies."""
    from concurrent.futures import ThreadPoolExecutor

    def one(label: str) -> tuple[str, int]:
        with ForkServer(label, untrusted=False, threading=THREADS, parent=warm_parent) as server:
            server.start(120)
            return server.source, server.zygote_pid

    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(one, ["baseline", "candidate"] * 2))
    assert [source for source, _ in got] == ["warm parent"] * 4
    assert len({pid for _, pid in got}) == 4
