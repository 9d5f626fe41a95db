"""The sandboxed worker's filesystem view and uid: what its allow-list root holds, which caches
are copy-on-write, and when the uid switch is refused (with the path that stops it)."""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

import perfbench
from perfbench.isolation.sandbox import worker_view
from perfbench.isolation.sandbox.worker_view import PRIVATE_DIR_BYTES, plan_view, root_script


@pytest.fixture
def tmp_path():
    """A temporary directory others may enter (pytest's own sit in a 700 directory)."""
    d = tempfile.mkdtemp(prefix="perfbench-view-test-")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _home(tmp_path, monkeypatch, only_extra=True):
    home = tmp_path / "home"
    (home / "project" / "task").mkdir(parents=True)
    (home / "project" / "cand.py").write_text("def kernel(x): return x\n")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CACHE_HOME", "PERFBENCH_BUILD_DIR", "TORCH_EXTENSIONS_DIR"):
        monkeypatch.delenv(var, raising=False)
    if only_extra:   # only the paths each test names (the real interpreter lives in the real home)
        monkeypatch.setattr(worker_view, "needed_paths", lambda extra=(): [os.path.realpath(p) for p in extra])
    return home


def test_the_root_holds_the_needed_paths_and_the_caches_as_overlays(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    view = plan_view((str(home / "project" / "cand.py"), str(home / "project" / "task")))
    assert view.expose == (str(home / "project" / "cand.py"), str(home / "project" / "task"))
    assert view.caches == (str(home / ".cache" / "perfbench" / "torch_extensions"), str(home / ".cache" / "torch_extensions"))
    assert all(os.path.isdir(c) for c in view.caches)          # made, so they can be overlaid
    script = root_script(view, "/p/.root", "/p")
    assert "mount -t tmpfs -o mode=755 tmpfs /p/.root\n" in script and script.startswith("umask 022\n")
    assert "mount --rbind /usr /p/.root/usr\n" in script and "mount -t proc proc /p/.root/proc\n" in script
    # /dev is an allow-list of its own: the harmless nodes bound, never the host's /dev whole
    assert "mount -t tmpfs -o mode=755 tmpfs /p/.root/dev;" in script and " /dev /p/.root/dev" not in script
    assert "touch /p/.root/dev/null; mount --rbind /dev/null /p/.root/dev/null\n" in script
    assert "ln -s /proc/self/fd /p/.root/dev/fd\n" in script
    assert f"touch /p/.root{home}/project/cand.py; mount --rbind {home}/project/cand.py /p/.root{home}/project/cand.py\n" in script
    assert f"mkdir -p /p/.root{home}/project/task; mount --rbind {home}/project/task /p/.root{home}/project/task\n" in script
    # the private directory: a tmpfs of bounded size owned by the worker's uid, not the scorer's on disk
    assert view.uid not in (None, 0) and (f"mkdir -p /p/.root/p; mount -t tmpfs -o size={PRIVATE_DIR_BYTES},mode=700,"
                                          f"uid={view.uid},gid={view.gid} tmpfs /p/.root/p\n") in script
    assert "mount --bind /p " not in script
    assert (f"lowerdir={home}/.cache/perfbench/torch_extensions,upperdir=/p/.root/p/.overlay/0/upper,"
            f"workdir=/p/.root/p/.overlay/0/work /p/.root{home}/.cache/perfbench/torch_extensions\n") in script
    assert f"chown -R {view.uid}:{view.gid} /p/.root{home}/.cache/perfbench/torch_extensions" in script
    assert "/home" not in {p for p in view.expose}   # the home itself is never bound: not in the root


def test_a_needed_path_inside_a_closed_directory_still_switches_the_uid(tmp_path, monkeypatch):
    """mkdtemp's 700, pytest's temporary root: the directories on the way are the new root's own."""
    _home(tmp_path, monkeypatch)
    closed = tmp_path / "srv"
    (closed / "task").mkdir(parents=True)
    closed.chmod(0o700)
    view = plan_view((str(closed / "task"),))
    assert view.expose == (str(closed / "task"),) and view.uid not in (None, 0)


def test_uid_refused_when_a_needed_path_itself_is_closed_to_others(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    secret = home / "project" / "cand.py"
    secret.chmod(0o600)
    view = plan_view((str(secret),))
    assert view.uid is None and view.why_not_uid.startswith(f"{secret} is not readable by other users")
    secret.chmod(0o644)
    assert plan_view((str(secret),)).uid not in (None, 0)


def test_paths_with_spaces_and_quotes_are_quoted(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    odd = home / "it's a dir"
    odd.mkdir()
    view = plan_view((str(odd),))
    assert f"mkdir -p '/p/.root{home}/it'\"'\"'s a dir'" in root_script(view, "/p/.root", "/p")


def test_the_checkout_is_reduced_to_the_package_and_system_dirs_are_not_listed(tmp_path, monkeypatch):
    """The worker's PYTHONPATH names perfbench's checkout (tasks, .git beside the package): only
    the package is needed.  The interpreter is; /usr is bound whole, not per path."""
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    needed = worker_view.needed_paths(("/usr/bin/env",))
    package = str(Path(perfbench.__file__).resolve().parent)
    assert package in needed or any(package.startswith(p + "/") for p in needed)
    assert os.path.dirname(package) not in needed
    assert os.path.realpath(sys.base_prefix) in needed or os.path.realpath(sys.base_prefix).startswith("/usr")
    assert str(tmp_path) in needed                      # the user's own PYTHONPATH is
    assert not any(p == "/usr" or p.startswith("/usr/") for p in needed)


def test_a_symlinked_task_file_is_bound_where_the_worker_opens_it(tmp_path, monkeypatch):
    real = tmp_path / "shared" / "inputs.py"
    real.parent.mkdir()
    real.write_text("x = 1\n")
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "inputs.py").symlink_to(real)
    assert str(tmp_path / "task" / "inputs.py") in worker_view.needed_paths((str(tmp_path / "task" / "inputs.py"),))


def test_top_level_names_the_roots_entries(tmp_path):
    view = worker_view.WorkerView(("/work/x/.venv", "/root/.pyenv"), ("/root/.cache/t",))
    names = view.top_level("/tmp/perfbench-sandbox-x")
    assert {"work", "root", "tmp", "proc", "dev", "usr", "etc"} <= names
    assert not {"home", "opt", "srv", "var"} & names


def test_a_file_closed_to_others_is_bound_from_a_readable_copy(tmp_path, monkeypatch):
    """A candidate `tempfile` wrote (0600): the uid layer does not depend on it (#39)."""
    from perfbench.isolation.sandbox.worker_view import readable_copies

    home = _home(tmp_path, monkeypatch)
    secret = home / "project" / "cand.py"
    secret.chmod(0o600)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    copies = readable_copies((str(secret),), str(private))
    [(path, copy)] = copies
    assert path == str(secret) and open(copy).read() == secret.read_text()
    assert os.stat(copy).st_mode & 0o777 == 0o644 and os.stat(os.path.dirname(copy)).st_mode & 0o777 == 0o755
    view = plan_view((str(secret),), copies=copies)
    assert view.uid not in (None, 0)
    script = root_script(view, "/new-root", str(private))
    assert f"mount --rbind {copy} /new-root{secret}" in script
    assert f"mount --rbind {secret} " not in script
    assert readable_copies((str(home / "project"),), str(private)) == ()   # a directory: not copied
