"""The sandbox's bookkeeping: what the verdict records from the worker's own probe, and how a
missing layer is reported or refused.  (The layers themselves: tests/adversarial.)"""
import os
import sys
from pathlib import Path

import pytest

from perfbench.core.errors import EnvironmentUnavailable
from perfbench.isolation.sandbox.plan import LAYERS, Isolation, SandboxPlan, isolation_from_probe
from perfbench.isolation.sandbox.worker_view import WorkerView
from perfbench.pipeline.score import ScoreConfig
from perfbench.pipeline.process_checks import isolation_record


class FakeCgroup:
    name = "perfbench-candidate-1-abcd"
    procs_files = ["/sys/fs/cgroup/x/cgroup.procs"]
    cpus = (0,)

    def describe(self):
        return "v2:/sys/fs/cgroup/x"


VIEW = WorkerView(("/home/u/.venv",), ("/home/u/.cache/perfbench",), 65534, 65534)
PLAN = SandboxPlan(FakeCgroup(), True, private_dir="/tmp/perfbench-sandbox-x", view=VIEW, cpus=(0,))
GOOD_PROBE = {"pid": 1, "uid": 65534, "uids": [65534] * 4, "cgroups": ["/perfbench-candidate-1-abcd"],
              "net_devices": ["lo"], "mount_ns_differs": True, "ipc_ns_differs": True, "pid_ns_differs": True,
              "writable_mounts": ["/dev/shm", "/tmp/perfbench-sandbox-x"], "no_new_privs": True, "cap_eff": 0,
              "cap_bnd": 0, "affinity_widened": [0], "root_entries": ["dev", "etc", "proc", "sys", "tmp", "usr"],
              "keyrings_denied": True, "userfaultfd_denied": True,
              "private_fs": "tmpfs"}


def test_complete_probe_records_every_layer():
    iso = isolation_from_probe(GOOD_PROBE, PLAN)
    assert iso.complete and iso.missing == ()
    assert all(iso.to_dict()[x] for x in LAYERS)


@pytest.mark.parametrize("key,value,layer", [
    ("pid_ns_differs", False, "pid_ns"), ("net_devices", ["eth0", "lo"], "net_ns"), ("cgroups", ["/"], "cgroup"),
    ("writable_mounts", ["/", "/dev/shm", "/tmp/perfbench-sandbox-x"], "readonly_fs"),
    ("no_new_privs", False, "no_new_privs"), ("cap_eff", 1 << 21, "caps_dropped"),
    ("uids", [65534, 0, 65534, 65534], "uid"), ("root_entries", ["dev", "etc", "home", "opt", "usr"], "minimal_root"),
    ("root_entries", None, "minimal_root"), ("affinity_widened", [0, 1], "cpuset"), ("affinity_widened", [], "cpuset"),
    ("keyrings_denied", False, "no_keyrings"), ("userfaultfd_denied", False, "no_userfaultfd"),
    ("private_fs", "ext4", "private_tmpfs"),
])
def test_a_layer_not_observed_is_named(key, value, layer):
    iso = isolation_from_probe(dict(GOOD_PROBE, **{key: value}), PLAN)
    assert not iso.to_dict()[layer] and not iso.complete
    assert [m for m in iso.missing if m.startswith(layer)] == [f"{layer}: set up but not observed in the worker"]


def test_cpuset_does_not_apply_without_pinned_cores():
    """CUDA tasks pin no cores: the layer is n/a (None), neither missing nor required."""
    iso = isolation_from_probe(dict(GOOD_PROBE, affinity_widened=[0, 1]), SandboxPlan(
        FakeCgroup(), True, private_dir="/tmp/perfbench-sandbox-x", view=VIEW, cpus=None))
    assert iso.to_dict()["cpuset"] is None and iso.complete and iso.missing == ()


def test_uid_not_switched_is_missing_with_the_reason():
    stays_root = WorkerView(("/srv/task",), (), why_not_uid="/srv/task is not readable by other users")
    plan = SandboxPlan(FakeCgroup(), True, missing=("uid: /srv/task is not readable by other users",),
                       private_dir="/tmp/perfbench-sandbox-x", view=stays_root, cpus=(0,))
    iso = isolation_from_probe(dict(GOOD_PROBE, uid=0, uids=[0] * 4), plan)
    assert iso.to_dict()["uid"] is False and iso.to_dict()["worker_uid"] == 0 and not iso.complete
    assert iso.missing == ("uid: /srv/task is not readable by other users",)


def test_wrap_puts_the_worker_in_namespaces_and_drops_privileges():
    cmd = PLAN.wrap(["python", "-m", "w"])
    assert cmd[0] == "unshare" and {"--pid", "--net", "--ipc", "--mount", "--mount-proc"} <= set(cmd)
    assert "setpriv" in cmd and "--no-new-privs" in cmd and "--bounding-set=-all" in cmd
    assert {"--reuid=65534", "--regid=65534", "--clear-groups"} <= set(cmd)
    assert cmd[-3:] == ["python", "-m", "w"]
    script = cmd[cmd.index("-c") + 1]
    assert f"echo $$ > {FakeCgroup.procs_files[0]}" in script
    # a new root with the venv bound in, the cache a private overlay owned by the worker's uid,
    # then everything read-only but the private directory and the cache overlay
    root = "/tmp/perfbench-sandbox-x/.root"
    assert f"mount -t tmpfs -o mode=755 tmpfs {root}\n" in script
    assert f"mount --rbind /home/u/.venv {root}/home/u/.venv\n" in script
    assert f"chown -R 65534:65534 {root}/home/u/.cache/perfbench\n" in script
    # ... but the worker's own /proc (CUDA's cuInit fails on a read-only one), whose system-wide
    # knobs are read-only
    assert 'case "$m" in /proc) continue;; esac' in script
    assert "for p in /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus /proc/fs; do" in script
    order = [script.index(x) for x in ("pivot_root . .old", "remount,bind,ro", "remount,bind,rw /tmp/perfbench-sandbox-x\n",
                                         "remount,bind,rw /home/u/.cache/perfbench\n", "cd /tmp/perfbench-sandbox-x\nexec")]
    assert order == sorted(order)
    only_cgroup = SandboxPlan(FakeCgroup(), False).wrap(["python"])
    assert only_cgroup[:2] == ["sh", "-c"] and only_cgroup[-1] == "python"


class FakeWorker:
    startup_s = 0.5

    def __init__(self, iso):
        self.iso = iso

    def start(self, timeout_s):
        return self.iso


def test_require_sandbox_refuses_when_a_layer_is_missing():
    missing = Isolation({x: x != "net_ns" for x in LAYERS}, 0, {}, ("net_ns: set up but not observed in the worker",))
    with pytest.raises(EnvironmentUnavailable, match="--require-sandbox: net_ns"):
        isolation_record(FakeWorker(missing), ScoreConfig(require_sandbox=True), nondumpable=True)
    record, warnings = isolation_record(FakeWorker(missing), ScoreConfig(), nondumpable=True)
    assert record["net_ns"] is False and record["startup_ms"] == 500.0
    assert warnings == ("sandbox layer missing: net_ns: set up but not observed in the worker",)
    complete = Isolation({x: True for x in LAYERS}, 0, {}, ())
    assert isolation_record(FakeWorker(complete), ScoreConfig(require_sandbox=True), nondumpable=True)[1] == ()
    with pytest.raises(EnvironmentUnavailable, match="scorer_nondumpable"):
        isolation_record(FakeWorker(complete), ScoreConfig(require_sandbox=True), nondumpable=False)


def test_private_directories_of_a_killed_scorer_are_swept(tmp_path):
    """A scorer killed with SIGKILL leaves its private directory (overlay copies of the extension
    cache: megabytes) behind; the next one removes it, and only it."""
    import os
    import subprocess
    import sys

    from perfbench.system.procfs import owner_tag, pid_namespace
    from perfbench.isolation.sandbox.plan import sweep_stale_private_dirs

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    ns = pid_namespace()
    stale = tmp_path / f"perfbench-sandbox-candidate-{ns}-{dead.pid}-ab_c12x9"
    live = tmp_path / f"perfbench-sandbox-candidate-{owner_tag()}-zz12ab34"
    elsewhere = tmp_path / f"perfbench-sandbox-candidate-1{ns}-{dead.pid}-ab_c12x9"   # another pid namespace's
    other = tmp_path / "perfbench-sandbox-by-hand"
    for d in (stale, live, elsewhere, other):
        (d / ".overlay").mkdir(parents=True)
    assert sweep_stale_private_dirs(str(tmp_path)) == [stale.name]
    assert sorted(os.listdir(tmp_path)) == sorted(d.name for d in (live, elsewhere, other))


def test_a_killed_scorers_worker_logs_are_swept_by_the_next(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys
    import tempfile

    from perfbench.system.procfs import owner_tag, pid_namespace
    from perfbench.isolation.sandbox.plan import worker_log_dir

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / f"perfbench-worker-{pid_namespace()}-{dead.pid}-k2_x9abc"
    stale.mkdir()
    (stale / "candidate.log").write_text("left by a scorer killed before it cleaned up")
    mine = worker_log_dir()
    assert mine.parent == tmp_path and mine.name.startswith(f"perfbench-worker-{owner_tag()}-")
    assert os.listdir(tmp_path) == [mine.name]
    assert worker_log_dir() != mine and mine.is_dir()   # a live owner's directory is kept


def test_a_forked_worker_is_not_its_namespaces_init_and_still_has_the_pid_layer():
    """A worker forked from a zygote shares the zygote's PID namespace (the zygote is its PID 1):
    the layer is whether its namespace is not the scorer's."""
    iso = isolation_from_probe(dict(GOOD_PROBE, pid=3), PLAN)
    assert iso.complete and iso.layers["pid_ns"] is True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_the_scorer_is_nondumpable_before_any_zygote_exists(monkeypatch):
    """`score` spawns the zygotes before it imports torch (pipeline/score.py); PR_SET_DUMPABLE 0
    must still come first, so no sandboxed process ever coexists with a dumpable scorer."""
    import ctypes

    from perfbench.isolation.processes.cpu_threads import CpuThreading
    from perfbench.pipeline import sandboxes
    from perfbench.task.spec import load_task

    libc = ctypes.CDLL(None)
    dumpable = lambda: libc.prctl(3, 0, 0, 0, 0)   # noqa: E731 - PR_GET_DUMPABLE
    seen = []
    monkeypatch.setattr(sandboxes, "spawn_zygotes", lambda *a, **k: seen.append(dumpable()) or {})
    task = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task"
    was = dumpable()
    libc.prctl(4, 1, 0, 0, 0)   # dumpable, as a fresh scorer is (an earlier in-process score cleared it)
    try:
        start = sandboxes.start_scorer(load_task(task), "cpu", task / "solution.py", ScoreConfig(),
                                       CpuThreading.for_task(1))
    finally:
        libc.prctl(4, was, 0, 0, 0)
    assert seen == [0] and start.nondumpable and start.servers == {}


def test_the_zygote_empties_what_its_workers_left_whatever_its_modes(tmp_path):
    """#58 (4): zygote.empty_owned, run on the sandbox's /dev/shm as each worker ends: files,
    directories a worker made unreadable to itself, and links (removed, not followed)."""
    from perfbench.isolation.processes.zygote import empty_owned

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not the worker's to lose")
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "a").write_bytes(b"x" * 4096)
    locked = shm / "d" / "e"
    locked.mkdir(parents=True)
    (locked / "f").write_text("deep")
    os.chmod(locked, 0)
    os.chmod(shm / "d", 0)
    os.symlink(outside, shm / "link")
    assert empty_owned(str(shm)) == 5
    assert list(shm.iterdir()) == [] and (outside / "keep").exists()
    assert empty_owned(str(tmp_path / "missing")) == 0
