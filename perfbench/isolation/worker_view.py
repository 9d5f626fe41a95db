"""What a sandboxed worker sees of the filesystem, and which user it runs as.

- **The scorer's home is hidden.**  An empty read-only tmpfs is mounted over it; only the paths
  the worker needs to run (the interpreter's prefix, the venv, every `sys.path` entry, perfbench,
  the task, the candidate) are bound back, read-only.  Dotfiles, keys, other projects: not there.
  So is every directory above a needed path that other users may not enter (a `mkdtemp` task
  directory's parent, pytest's temporary root): hidden the same way, so the uid switch works.
- **Extension build caches are copy-on-write.**  torch's extension loader takes a lock file in
  the build directory and ninja may touch its logs, so an honest C++ candidate needs the cache
  writable; each cache directory gets a private overlay (upper layer in the worker's private
  directory, removed after), so nothing written there reaches the real cache or a later run.
- **An unprivileged uid** (`nobody`) when the scorer is root, after the mounts are set up.  It is
  only chosen when every path the worker needs is itself readable by other users; otherwise the
  worker stays uid 0 without capabilities, and the verdict says which path stopped it.

`hide_script` and `overlay_caches_script` are shell the sandbox runs as root inside the new
mount namespace, before it drops privileges (sandbox.py); every path in them is quoted.
"""
from __future__ import annotations

import os
import pwd
import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import perfbench

from ..native import build_root

UNPRIVILEGED_USER = "nobody"
_FALLBACK_ID = 65534   # nobody/nogroup on nearly every Linux


@dataclass(frozen=True)
class WorkerView:
    """The filesystem view and user of one sandboxed worker."""

    hidden: tuple[str, ...]     # each behind an empty tmpfs: the home, and closed directories above needed paths
    expose: tuple[str, ...]     # paths under the hidden ones bound back read-only
    caches: tuple[str, ...]     # extension build caches, each behind a private copy-on-write overlay
    uid: int | None = None      # run as this uid (None: stays uid 0 without capabilities)
    gid: int | None = None
    why_not_uid: str = ""       # when uid is None: why


def under(path: str, root: str) -> bool:
    """`path` is `root` or inside it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths: list[str]) -> list[str]:
    """Drop every path inside another one of the list."""
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any(under(p, q) for q in out):
            out.append(p)
    return sorted(out)


def extension_caches() -> tuple[str, ...]:
    """The build caches compiled extensions live in: perfbench's (native.py) and torch's."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    torch_dir = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(cache_home, "torch_extensions")
    return tuple(_outermost([os.path.realpath(build_root()), os.path.realpath(torch_dir)]))


def needed_paths(extra: tuple[str, ...] = ()) -> list[str]:
    """Every path the worker reads to start and load: the interpreter, its libraries, the venv,
    perfbench, and `extra` (the task, the candidate)."""
    paths = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable)), str(Path(perfbench.__file__).resolve().parents[1]),
             *(p for p in sys.path if p and os.path.isabs(p)), *extra]
    return [os.path.realpath(p) for p in paths if os.path.exists(p)]


def _unprivileged_ids() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return _FALLBACK_ID, _FALLBACK_ID


def _closed_to_others(path: str) -> bool:
    """Other users may not enter (directory) or read (file) `path`."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(st.st_mode) else 0)
    return st.st_mode & need != need


def closed_ancestor(path: str) -> str | None:
    """The outermost directory above `path` that other users cannot enter, or None."""
    parts = Path(path).parents
    for parent in reversed(parts[:-1] if len(parts) else parts):   # from the top down, "/" excluded
        try:
            if not os.stat(parent).st_mode & stat.S_IXOTH:
                return str(parent)
        except OSError:
            return str(parent)
    return None


def plan_view(extra: tuple[str, ...] = (), *, switch_uid: bool = True) -> WorkerView:
    """The view for a worker that reads `extra` besides what every worker needs.  Hidden: the
    home, and every directory above a needed path that other users could not pass (it is
    replaced by a tmpfs of mode 755 holding just the needed paths, so the uid switch still works)."""
    home = os.path.realpath(os.path.expanduser("~"))
    caches = extension_caches()
    for c in caches:
        os.makedirs(c, exist_ok=True)   # so it can be overlaid; a first build then lands in the overlay
    needed = needed_paths(extra)
    roots = [home] if home != "/" and os.path.isdir(home) else []
    roots += [a for p in [*needed, *caches] if (a := closed_ancestor(p))]
    hidden = tuple(_outermost(roots))
    expose = tuple(_outermost([p for p in needed if any(under(p, h) and p != h for h in hidden)]))
    if not switch_uid:
        return WorkerView(hidden, expose, caches, why_not_uid="uid switching was not asked for")
    blocked = next((p for p in [*needed, *caches] if _closed_to_others(p)), None)
    if blocked is not None:
        return WorkerView(hidden, expose, caches, why_not_uid=(
            f"{blocked} is not readable by other users, so the worker could not start as "
            f"{UNPRIVILEGED_USER!r} (make it o+rx)"))
    uid, gid = _unprivileged_ids()
    return WorkerView(hidden, expose, caches, uid, gid)


def _staged(path: str, view: WorkerView, stage: str) -> str:
    """Where `path` is reachable while its hidden root is covered: under that root's stage."""
    for i, root in enumerate(view.hidden):
        if under(path, root):
            return f"{stage}/{i}{path[len(root):]}"
    return path


def hide_script(view: WorkerView, stage: str) -> str:
    """Before the read-only remount: each hidden root bound at `stage`/i (so its parts can be
    bound back), an empty tmpfs over it, the exposed paths and the caches' mount points made."""
    q = shlex.quote
    lines = []
    for i, root in enumerate(view.hidden):
        lines += [f"mkdir -p {q(f'{stage}/{i}')}", f"mount --bind {q(root)} {q(f'{stage}/{i}')}",
                  f"mount -t tmpfs -o mode=755 tmpfs {q(root)}"]
    for p in view.expose:
        make = f"mkdir -p {q(p)}" if os.path.isdir(p) else f"mkdir -p {q(os.path.dirname(p))}; touch {q(p)}"
        lines.append(f"{make}; mount --bind {q(_staged(p, view, stage))} {q(p)}")
    lines += [f"mkdir -p {q(c)}" for c in view.caches if _staged(c, view, stage) != c]
    return "".join(line + "\n" for line in lines)


def overlay_caches_script(view: WorkerView, stage: str, private_dir: str) -> str:
    """After the read-only remount: a private copy-on-write overlay on each cache (owned by the
    worker's uid, if it switches), then the staged roots let go."""
    q = shlex.quote
    lines = []
    for i, c in enumerate(view.caches):
        upper, work = f"{private_dir}/.overlay/{i}/upper", f"{private_dir}/.overlay/{i}/work"
        lines.append(f"mkdir -p {q(upper)} {q(work)}")
        options = f"lowerdir={_staged(c, view, stage)},upperdir={upper},workdir={work}"
        lines.append(f"mount -t overlay overlay -o {q(options)} {q(c)}")
        if view.uid is not None:   # copies the cache up into the overlay: ~1 MB, a few ms here
            lines.append(f"chown -R {view.uid}:{view.gid} {q(c)}")
    for i in range(len(view.hidden)):
        lines.append(f"umount -l {q(f'{stage}/{i}')}; rmdir {q(f'{stage}/{i}')}")
    if view.uid is not None:
        lines.append(f"chown {view.uid}:{view.gid} {q(private_dir)}")
    return "".join(line + "\n" for line in lines)


def setpriv_user_args(view: WorkerView) -> list[str]:
    if view.uid is None:
        return []
    return [f"--reuid={view.uid}", f"--regid={view.gid}", "--clear-groups"]
