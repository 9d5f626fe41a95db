"""The sandboxed worker's filesystem view and uid: what is bound back into the hidden home, which
caches are copy-on-write, and when the uid switch is refused (with the path that stops it)."""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from perfbench.isolation import worker_view
from perfbench.isolation.worker_view import closed_ancestor, hide_script, overlay_caches_script, plan_view


@pytest.fixture
def tmp_path():
    """A temporary directory others may enter (pytest's own sit in a 700 directory, which the
    view would hide: the closed-directory test makes its own)."""
    d = tempfile.mkdtemp(prefix="perfbench-view-test-")
    os.chmod(d, 0o755)
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def _home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "project" / "task").mkdir(parents=True)
    (home / "project" / "cand.py").write_text("def kernel(x): return x\n")
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CACHE_HOME", "PERFBENCH_BUILD_DIR", "TORCH_EXTENSIONS_DIR"):
        monkeypatch.delenv(var, raising=False)
    # Only the paths each test names (the real interpreter lives in the real home).
    monkeypatch.setattr(worker_view, "needed_paths", lambda extra=(): [os.path.realpath(p) for p in extra])
    return home


def test_only_needed_paths_under_home_are_exposed(tmp_path, monkeypatch):
    home = _home(tmp_path, monkeypatch)
    view = plan_view((str(home / "project" / "cand.py"), str(home / "project" / "task")))
    assert view.hidden[0] == str(home)
    assert view.expose == (str(home / "project" / "cand.py"), str(home / "project" / "task"))
    assert view.caches == (str(home / ".cache" / "perfbench" / "torch_extensions"), str(home / ".cache" / "torch_extensions"))
    assert all(os.path.isdir(c) for c in view.caches)          # made, so they can be overlaid
    script = hide_script(view, "/p/.hidden")
    assert f"mount --bind {home} /p/.hidden/0\nmount -t tmpfs -o mode=755 tmpfs {home}\n" in script
    assert f"touch {home}/project/cand.py; mount --bind /p/.hidden/0/project/cand.py {home}/project/cand.py" in script
    after = overlay_caches_script(view, "/p/.hidden", "/p")
    assert "lowerdir=/p/.hidden/0/.cache/perfbench/torch_extensions,upperdir=/p/.overlay/0/upper,workdir=/p/.overlay/0/work" in after
    assert view.uid not in (None, 0) and after.rstrip().endswith(f"chown {view.uid}:{view.gid} /p")
    assert f"chown -R {view.uid}:{view.gid} {home}/.cache/perfbench/torch_extensions" in after


def test_closed_directories_above_a_needed_path_are_hidden_and_the_uid_still_switches(tmp_path, monkeypatch):
    """A task in a directory other users cannot enter (mkdtemp's 700; pytest's own temporary
    root is one too): that directory is hidden like the home, the task bound back."""
    _home(tmp_path, monkeypatch)
    closed = tmp_path / "srv"
    (closed / "task").mkdir(parents=True)
    closed.chmod(0o700)
    view = plan_view((str(closed / "task"),))
    top = closed_ancestor(str(closed / "task"))
    assert top is not None and top in view.hidden and str(closed / "task") in view.expose
    assert view.uid not in (None, 0)


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
    assert f"mkdir -p '{home}/it'\"'\"'s a dir'" in hide_script(view, "/p/.hidden")


def test_the_interpreter_is_always_needed():
    assert os.path.realpath(sys.base_prefix) in worker_view.needed_paths()
