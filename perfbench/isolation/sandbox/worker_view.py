"""What a sandboxed worker sees of the filesystem, and which user it runs as.

- **An allow-list root.**  The worker's `/` is a fresh tmpfs that holds only the system
  directories (`SYSTEM_DIRS`: programs, libraries, compilers, /etc), /sys, a /proc of its own
  PID namespace, a /dev of its own (null, zero, random, ..., the GPU's nodes; no disks), and, bound read-only at their own paths, the paths it needs: the
  interpreter's prefix, the venv, the entries of its own `sys.path` (perfbench's checkout reduced
  to the package), the task's files it reads and the candidate.  Everything else does not exist
  there: the scorer's home, the repository around the task (its git objects), other checkouts,
  the rest of /tmp, /opt, /srv, ...  A deny-list (hide the solution at its path) was tried first
  and leaked the solution through `git show` and another clone: only an allow-list closes the class.
  Directories on the way to a needed path are the tmpfs's own (mode 755), so a path inside a
  directory others cannot enter (a 700 home, a `mkdtemp`) stays reachable after the uid switch.
- **Extension build caches are copy-on-write.**  torch's extension loader takes a lock file in
  the build directory and ninja may touch its logs, so an honest C++ candidate needs the cache
  writable; each cache directory gets a private overlay (upper layer in the worker's private
  directory, removed after), so nothing written there reaches the real cache or a later run.
- **An unprivileged uid** (`nobody`) when the scorer is root, after the mounts are set up.  It is
  only chosen when every path the worker needs is itself readable by other users.  A file of the
  caller's that is not (a candidate written by `tempfile`, mode 0600) is copied, readable, into
  the sandbox's private directory and bound at its own path (`readable_copies`): the uid layer
  does not depend on the user's file modes.  A directory, or a path of the environment itself,
  that others cannot read still leaves the worker uid 0 without capabilities, and the verdict
  says which path stopped it.

`root_script` is shell the sandbox runs as root inside the new mount namespace before it moves
into the new root and drops privileges (plan.py); every path in it is quoted.
"""
from __future__ import annotations

import functools
import glob
import json
import os
import shutil
import pwd
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ...task.native_build import build_root

UNPRIVILEGED_USER = "nobody"
_FALLBACK_ID = 65534   # nobody/nogroup on nearly every Linux
# Shared by every program on the machine, never a user's or a task's files: bound whole.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# The worker's private directory (its TMPDIR and cwd): a tmpfs this size at most, whose pages
# count against its memory limit too.
PRIVATE_DIR_BYTES = 2 << 30
# The sandbox's /dev/shm: a tmpfs this size at most (#58 (4)), emptied by the zygote as each
# worker ends (zygote.py): its pages count against the memory limit of the worker that wrote
# them, but outlived its cgroup, charged to none, for the next worker to add to.
SHM_BYTES = 1 << 30
KERNEL_DIRS = ("/sys",)   # bound whole (CPU topology, PCI for CUDA); /proc and /dev made afresh
# /dev is an allow-list too: a worker left at uid 0 (without capabilities, where the uid could
# not switch) could still open the raw disk by owner permission and read any file's bytes.
DEVICE_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEVICE_LINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
                "stderr": "/proc/self/fd/2"}


@dataclass(frozen=True)
class WorkerView:
    """The filesystem view and user of one sandboxed worker."""

    expose: tuple[str, ...]     # bound read-only at their own paths into the worker's root
    caches: tuple[str, ...]     # extension build caches, each behind a private copy-on-write overlay
    uid: int | None = None      # run as this uid (None: stays uid 0 without capabilities)
    gid: int | None = None
    why_not_uid: str = ""       # when uid is None: why
    copies: tuple[tuple[str, str], ...] = ()   # (path, its readable copy bound there instead)

    def top_level(self, private_dir: str) -> set[str]:
        """The names the worker's `/` may hold (what its probe of `/` is compared with)."""
        names = {d.lstrip("/") for d in (*SYSTEM_DIRS, *KERNEL_DIRS) if os.path.lexists(d)} | {"dev", "proc", "tmp"}
        return names | {Path(p).parts[1] for p in (*self.expose, *self.caches, private_dir) if len(Path(p).parts) > 1}


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
    """The build caches compiled extensions live in: perfbench's (task/native_build.py) and torch's."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    torch_dir = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(cache_home, "torch_extensions")
    return tuple(_outermost([os.path.realpath(build_root()), os.path.realpath(torch_dir)]))


@functools.cache
def _interpreter_sys_path(executable: str, pythonpath: str) -> tuple[str, ...]:
    """The `sys.path` a fresh interpreter starts with (its prefixes, site-packages, .pth entries,
    PYTHONPATH): exactly what a worker imports from, unlike this process's own (pytest and
    scripts add their directories)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    try:
        out = subprocess.run([executable, "-c", "import json, sys; print(json.dumps(sys.path))"], env=env,
                             cwd="/", capture_output=True, text=True, timeout=60, check=True)
        return tuple(json.loads(out.stdout))
    except (OSError, subprocess.SubprocessError, ValueError):
        return tuple(sys.path)


PROJECT_MARKERS = ("setup.py", "pyproject.toml")


def package_source_tree(name: str, keep_out: tuple[str, ...]) -> str:
    """The directory to show a worker for installed package `name`: the project it was installed
    from (the nearest directory above the package holding setup.py or pyproject.toml: an editable
    install reads its headers or kernels there, e.g. Scorch's csrc/), else the package itself.
    Found without importing it.  Refused (UsageError) when that tree holds a path of `keep_out`
    (the task, perfbench's checkout: their solutions must stay out of the worker's view)."""
    import importlib.util

    from ...core.errors import UsageError

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        raise UsageError(f"[sandbox] packages: {name!r} is not installed here (or has no source files)")
    package = os.path.dirname(os.path.realpath(spec.origin))
    tree = package
    if not {"site-packages", "dist-packages"} & set(Path(package).parts):   # installed from a source tree
        tree = next((str(d) for d in Path(package).parents
                     if d != Path("/") and any((d / marker).is_file() for marker in PROJECT_MARKERS)), package)
    refuse_if_holding(tree, keep_out, f"[sandbox] packages: {name!r} comes from {tree}")
    return tree


def refuse_if_holding(tree: str, keep_out: tuple[str, ...], what: str) -> None:
    """UsageError when directory `tree`, about to be shown to a candidate, holds a path of
    `keep_out` (the task, perfbench's checkout)."""
    from ...core.errors import UsageError

    inside = [k for k in keep_out if under(os.path.realpath(k), os.path.realpath(tree))]
    if inside:
        raise UsageError(f"{what}, which holds {inside[0]}; a candidate may not see that: use a checkout elsewhere")


def needed_paths(extra: tuple[str, ...] = ()) -> list[str]:
    """Every path outside the system directories the worker reads to start and load: the
    interpreter, its libraries, the venv, perfbench, the CUDA toolkit, and `extra` (the task's
    files, the candidate).  perfbench's checkout (the worker's PYTHONPATH) is reduced to the
    package: the tasks and the repository beside it stay out."""
    package = str(Path(__file__).resolve().parents[2])   # perfbench/
    checkout = os.path.dirname(package)
    prefixes = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix]
    entries = [p for p in _interpreter_sys_path(sys.executable, os.environ.get("PYTHONPATH", ""))
               if p and os.path.isabs(p) and os.path.realpath(p) != checkout]
    cuda = [os.environ[v] for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    paths = [*prefixes, os.path.dirname(os.path.realpath(sys.executable)), package, *entries, *cuda,
             *_toolchains(), *extra]
    # a file is bound at the path it is opened by (its directory resolved): a symlinked inputs.py
    # shows the file it points to, where the worker looks for it
    real = [os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p)) if os.path.isfile(p)
            else os.path.realpath(p) for p in paths if os.path.exists(p)]
    return _outermost([p for p in real if not any(under(p, d) for d in SYSTEM_DIRS)])


def _toolchains() -> list[str]:
    """The C/C++ compilers the environment names (CC, CXX) outside the system directories, whole
    (bin/, libexec/, include/): Triton builds its launcher with CC, torch extensions with CXX.
    Seen on a lent H200: CC=/opt/gcc/bin/gcc, so every Triton launch in a worker failed."""
    out = []
    for var in ("CC", "CXX"):
        path = shutil.which(os.environ.get(var, "")) if os.environ.get(var) else None
        if path and os.path.isabs(path):
            real = os.path.realpath(path)
            bin_dir = os.path.dirname(real)
            out.append(os.path.dirname(bin_dir) if os.path.basename(bin_dir) == "bin" else bin_dir)
    return out


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


def plan_view(extra: tuple[str, ...] = (), *, switch_uid: bool = True,
              copies: tuple[tuple[str, str], ...] = ()) -> WorkerView:
    """The view for a worker that reads `extra` besides what every worker needs; `copies`
    (from `readable_copies`) are bound in place of the paths they copy."""
    caches = extension_caches()
    for c in caches:
        os.makedirs(c, exist_ok=True)   # so it can be overlaid; a first build then lands in the overlay
    expose = tuple(needed_paths(extra))
    if not switch_uid:
        return WorkerView(expose, caches, why_not_uid="uid switching was not asked for", copies=copies)
    copied = dict(copies)
    blocked = next((p for p in [*expose, *caches] if p not in copied and _closed_to_others(p)), None)
    if blocked is not None:
        return WorkerView(expose, caches, why_not_uid=(
            f"{blocked} is not readable by other users, so the worker could not start as "
            f"{UNPRIVILEGED_USER!r} (make it o+rx)"), copies=copies)
    uid, gid = _unprivileged_ids()
    return WorkerView(expose, caches, uid, gid, copies=copies)


def readable_copies(extra: tuple[str, ...], private_dir: str) -> tuple[tuple[str, str], ...]:
    """Each regular file of `extra` that other users may not read, copied (mode 0644, owned
    by the scorer) under `private_dir`/.readable: (the path it is bound at, the copy)."""
    out = []
    for i, p in enumerate(extra):
        if not (os.path.isfile(p) and _closed_to_others(p)):
            continue
        folder = os.path.join(private_dir, ".readable", str(i))
        os.makedirs(folder)
        for d in (os.path.dirname(folder), folder):
            os.chmod(d, 0o755)
        copy = os.path.join(folder, os.path.basename(p))
        shutil.copyfile(p, copy)
        os.chmod(copy, 0o644)
        out.append((os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p)), copy))
    return tuple(out)


def _bind(source: str, target: str) -> str:
    q = shlex.quote
    make = f"mkdir -p {q(target)}" if os.path.isdir(source) else f"mkdir -p {q(os.path.dirname(target))}; touch {q(target)}"
    return f"{make}; mount --rbind {q(source)} {q(target)}"


def _dev_script(dev: str) -> list[str]:
    """A /dev of its own: the harmless character devices, the GPU's (/dev/nvidia*, for CUDA),
    the /proc links, and empty shm and pts (plan.py mounts a fresh shm)."""
    q = shlex.quote
    nodes = [f"/dev/{n}" for n in DEVICE_NODES] + sorted(glob.glob("/dev/nvidia*"))
    lines = [f"mkdir {q(dev)}; mount -t tmpfs -o mode=755 tmpfs {q(dev)}; mkdir {q(dev + '/shm')} {q(dev + '/pts')}"]
    lines += [_bind(n, dev + n[len("/dev"):]) for n in nodes if os.path.exists(n)]
    lines += [f"ln -s {q(target)} {q(f'{dev}/{name}')}" for name, target in DEVICE_LINKS.items()]
    return lines


def root_script(view: WorkerView, root: str, private_dir: str) -> str:
    """Build the worker's root at `root` (an empty directory; the new tmpfs goes on it): the
    system and kernel directories, the exposed paths, the private directory (writable), each
    cache as a private overlay owned by the worker's uid.  Still read-write: plan.py moves
    into it, then remounts everything read-only."""
    q = shlex.quote
    lines = ["umask 022", f"mount -t tmpfs -o mode=755 tmpfs {q(root)}"]
    for d in (*SYSTEM_DIRS, *KERNEL_DIRS):
        if os.path.islink(d):
            lines.append(f"ln -s {q(os.readlink(d))} {q(root + d)}")
        elif os.path.isdir(d):
            lines.append(_bind(d, root + d))
    lines.append(f"mkdir {q(root + '/proc')} {q(root + '/tmp')}; mount -t proc proc {q(root + '/proc')}")
    lines += _dev_script(root + "/dev")
    copied = dict(view.copies)
    lines += [_bind(copied.get(p, p), root + p) for p in view.expose]
    # The private directory is a tmpfs of its own, not the scorer's directory on disk: its size is
    # bounded, its pages count against the worker's memory limit, and nothing the worker writes
    # leaves dirty pages for the disk to write back while the next score is timed (#39).
    owner = f",uid={view.uid},gid={view.gid}" if view.uid is not None else ""
    lines.append(f"mkdir -p {q(root + private_dir)}; "
                 f"mount -t tmpfs -o size={PRIVATE_DIR_BYTES},mode=700{owner} tmpfs {q(root + private_dir)}")
    for i, c in enumerate(view.caches):
        upper, work = f"{root}{private_dir}/.overlay/{i}/upper", f"{root}{private_dir}/.overlay/{i}/work"
        lines.append(f"mkdir -p {q(upper)} {q(work)} {q(root + c)}")
        lines.append(f"mount -t overlay overlay -o {q(f'lowerdir={c},upperdir={upper},workdir={work}')} {q(root + c)}")
        if view.uid is not None:   # copies the cache up into the overlay: ~1 MB, a few ms here
            lines.append(f"chown -R {view.uid}:{view.gid} {q(root + c)}")
    return "".join(line + "\n" for line in lines)


def setpriv_user_args(view: WorkerView) -> list[str]:
    if view.uid is None:
        return []
    return [f"--reuid={view.uid}", f"--regid={view.gid}", "--clear-groups"]
