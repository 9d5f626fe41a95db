"""`--perfbench-against=REV`: the repository under test, checked out at REV beside this one.

A git worktree (not a clone: no copy of the object store, and `git worktree list` shows it while
it exists) in a fresh temporary directory, removed when the session ends.  Only what git has is
there: untracked files, submodules and built extensions of REV are not (docs/pytest.md).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path


class RevisionError(Exception):
    """REV cannot be checked out: the message says why (one line)."""


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise RevisionError("--perfbench-against needs git on PATH") from None
    if done.returncode != 0:
        raise RevisionError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"git {args[0]} failed")
    return done.stdout.strip()


@dataclass(frozen=True)
class RevisionCheckout:
    rev: str        # as the user wrote it
    sha: str
    repo: Path      # the repository under test (its top level)
    worktree: Path  # REV's top level
    root: Path      # the pytest rootdir's counterpart inside the worktree

    @property
    def label(self) -> str:
        short = self.sha[:10]
        return short if self.sha.startswith(self.rev) else f"{self.rev} ({short})"

    def python_path(self) -> list[str]:
        """Import roots that make REV's code shadow the current checkout's: the rootdir and
        the top level (flat layouts), their src/ (src layouts).  They go before site-packages,
        where an editable install of the current checkout points."""
        out: list[str] = []
        for base in (self.root, self.worktree):
            for p in (base / "src", base):
                if p.is_dir() and str(p) not in out:
                    out.append(str(p))
        return out

    def to_dict(self) -> dict[str, str]:
        return {"rev": self.rev, "sha": self.sha, "repo": str(self.repo), "worktree": str(self.worktree),
                "root": str(self.root)}

    @classmethod
    def from_dict(cls, d: dict[str, str]) -> "RevisionCheckout":
        return cls(d["rev"], d["sha"], Path(d["repo"]), Path(d["worktree"]), Path(d["root"]))


def check_out(rootdir: Path, rev: str) -> RevisionCheckout:
    """A worktree of the repository holding `rootdir`, at `rev`."""
    rootdir = Path(rootdir).resolve()
    try:
        top = Path(_git(rootdir, "rev-parse", "--show-toplevel")).resolve()
    except RevisionError as exc:
        raise RevisionError(f"--perfbench-against={rev}: {rootdir} is not in a git repository ({exc})") from None
    try:
        sha = _git(top, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}")
    except RevisionError:
        raise RevisionError(f"--perfbench-against={rev}: no such revision in {top}") from None
    parent = Path(tempfile.mkdtemp(prefix=f"perfbench-against-{sha[:10]}-"))
    worktree = parent / top.name
    try:
        _git(top, "worktree", "add", "--detach", "--quiet", str(worktree), sha)
    except RevisionError as exc:
        shutil.rmtree(parent, ignore_errors=True)
        raise RevisionError(f"--perfbench-against={rev}: git worktree add failed: {exc}") from None
    return RevisionCheckout(rev, sha, top, worktree, worktree / rootdir.relative_to(top))


def remove(checkout: RevisionCheckout) -> None:
    """Remove the worktree and git's record of it (best effort: a session ending on an error
    must still end)."""
    subprocess.run(["git", "-C", str(checkout.repo), "worktree", "remove", "--force", str(checkout.worktree)],
                   capture_output=True, timeout=300)
    shutil.rmtree(checkout.worktree.parent, ignore_errors=True)
    subprocess.run(["git", "-C", str(checkout.repo), "worktree", "prune"], capture_output=True, timeout=300)


def worker_env(checkout: RevisionCheckout) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(checkout.python_path() + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env
