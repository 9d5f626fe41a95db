"""Workers forked from a warmed zygote (isolation/processes/zygote.py, fork_server.py): each in the zygote's
sandbox with a cgroup of its own, how they end reported as for a spawned worker, and a zygote
that fails blamed on the machine before any worker ran, on the workers after."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perfbench.core.errors import CandidateRejected, EnvironmentUnavailable
from perfbench.isolation.processes import fork_server
from perfbench.isolation.processes.cpu_threads import CpuThreading
from perfbench.isolation.processes.warm_parent_handle import WarmParent
from perfbench.isolation.processes.worker_client import WorkerClient
from perfbench.isolation.processes.fork_server import ForkServer
from perfbench.isolation.wire.protocol import Op

THREADS = CpuThreading.for_task(1)


@pytest.fixture(scope="module")
def warm_parent():
    with WarmParent(THREADS) as parent:
        yield parent


@pytest.fixture(params=["spawned", "warm parent"])
def server(request):
    """Each zygote test twice: a zygote spawned as a new interpreter, and one forked into its
    sandbox by a warm parent (warm_parent.py)."""
    parent = request.getfixturevalue("warm_parent") if request.param == "warm parent" else None
    with ForkServer("candidate", untrusted=True, threading=THREADS, parent=parent) as s:
        s.start(120)
        assert s.source == request.param
        yield s


def test_forked_workers_are_sandboxed_each_in_a_cgroup_of_its_own(server, sandboxable):
    seen = []
    for _ in range(2):
        with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
            iso = w.start(30)
            assert iso.complete and iso.missing == (), iso.missing
            assert iso.details["probe"]["pid"] != 1 and iso.details["probe"]["pid_ns_differs"]
            seen.append((w.worker_pid, w.plan.cgroup.name))
            w.freeze()
            assert w.cpu_seconds() is not None
        assert w.plan.cgroup.pids() == []   # killed with its cgroup at close
    (pid_a, cg_a), (pid_b, cg_b) = seen
    assert pid_a != pid_b and cg_a != cg_b and server.plan.cgroup.name not in (cg_a, cg_b)
    assert server.proc.poll() is None    # the zygote serves on
    assert server.plan.private_dir and os.path.isdir(server.plan.private_dir)   # shared, kept until the zygote goes


def test_a_forked_worker_killed_by_a_signal_is_reported_as_crashed(server):
    with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
        w.start(30)
        os.kill(w.worker_pid, signal.SIGSEGV)
        with pytest.raises(CandidateRejected) as exc:
            w.request(Op.PING, 10)
    assert exc.value.reason == "candidate.crashed" and "SIGSEGV" in exc.value.message, exc.value


def test_exit_status_through_a_real_candidate(tmp_path):
    """A candidate that exits with status 3 at load: `candidate.exited (status 3)`, as from a fresh
    interpreter."""
    from perfbench.pipeline.score import ScoreConfig, score
    from perfbench.timing.sampler import SamplerConfig

    fix = Path(__file__).resolve().parents[1] / "fixtures"
    cfg = ScoreConfig(sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.05), processes=1, s_ref_policy="table")
    r = score(fix / "tiny_task", fix / "candidates" / "exits.py", cfg)
    assert [x.code for x in r.reasons] == ["candidate.exited"], r.reasons
    assert "status 3" in r.reasons[0].message and r.isolation["zygote_startup_ms"] > 0
    assert r.isolation["zygote_source"] == "warm parent"


def test_a_zygote_that_never_starts_is_the_machines_problem(monkeypatch):
    real = fork_server.spawn
    monkeypatch.setattr(fork_server, "spawn",
                        lambda module, *a, **k: real("perfbench.no_such_module", *a, **k))
    with ForkServer("candidate", untrusted=True, sandbox=False) as s:
        with pytest.raises(EnvironmentUnavailable, match="candidate's fork server"):
            s.start(30)


def test_a_zygote_gone_after_a_fork_is_blamed_on_its_workers(server):
    with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
        w.start(30)
    os.kill(server.zygote_pid, signal.SIGKILL)
    server.proc.wait(10)
    before = set(Path(tempfile.gettempdir()).glob("perfbench-worker-*"))
    with pytest.raises(CandidateRejected) as exc:
        WorkerClient("candidate", untrusted=True, server=server, threading=THREADS)
    assert exc.value.reason == "candidate.crashed" and "fork server" in exc.value.message
    assert set(Path(tempfile.gettempdir()).glob("perfbench-worker-*")) == before   # its log directory removed


@pytest.mark.slow   # (> 10 s in CI: `-m 'not slow'` leaves it out)
def test_fresh_workers_on_request(tmp_path):
    """`--fresh-workers`: every worker a new interpreter (no zygote in the verdict)."""
    fix = Path(__file__).resolve().parents[1] / "fixtures"
    proc = subprocess.run([sys.executable, "-m", "perfbench.cli.main", "score", str(fix / "tiny_task"),
                           str(fix / "candidates" / "honest_fast.py"), "--fresh-workers", "--processes", "1",
                           "--pairs", "6", "--max-pairs", "6", "--json", "--quiet"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"zygote_startup_ms"' not in proc.stdout and '"verdict": "scored"' in proc.stdout


def test_a_forked_worker_dies_with_its_zygote_whoever_holds_its_channel():
    """#64: a worker forked by a zygote outside any PID namespace (a trusted one, the sandbox
    off: nothing else ends it) dies with the zygote, though the scorer is alive and still holds
    its channel (PR_SET_PDEATHSIG); else a frozen worker of a killed scorer stayed for good."""
    with ForkServer("baseline", untrusted=False, sandbox=False, threading=THREADS) as s:
        s.start(120)
        assert not s.plan.namespaces
        with WorkerClient("baseline", untrusted=False, server=s, threading=THREADS) as w:
            w.start(30)
            worker = w.proc.pid
            assert Path(f"/proc/{worker}").exists()
            os.kill(s.zygote_pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while _running(worker) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not _running(worker), f"worker {worker} outlived its zygote"


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_the_oom_killer_picks_a_worker_first_and_the_scorer_last(server):
    """#58 (4): every worker (and the zygote it was forked from) asks to be the kernel's first
    pick when memory runs out; the scorer, where it may, its last."""
    from perfbench.isolation.sandbox.hardening import OOM_SCORE_SCORER, OOM_SCORE_WORKER

    with WorkerClient("candidate", untrusted=True, server=server, threading=THREADS) as w:
        w.start(30)
        assert Path(f"/proc/{w.worker_pid}/oom_score_adj").read_text().strip() == str(OOM_SCORE_WORKER)
    assert Path(f"/proc/{server.zygote_pid}/oom_score_adj").read_text().strip() == str(OOM_SCORE_WORKER)
    probe = subprocess.run([sys.executable, "-c", "from perfbench.isolation.sandbox.hardening import set_oom_score as s\n"
                            f"print(s({OOM_SCORE_SCORER}), open('/proc/self/oom_score_adj').read().strip())"],
                           capture_output=True, text=True, timeout=60)
    took, value = probe.stdout.split()
    # lowering needs CAP_SYS_RESOURCE (root without it here: then the scorer stays at 0, still
    # below every worker); it says whether the kernel took it
    assert (took == "True") == (value == str(OOM_SCORE_SCORER)) and int(value) <= 0
