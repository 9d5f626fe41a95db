"""The warm parent: one root process that imports torch once and makes every zygote by forking
(`python -m perfbench.isolation.processes.warm_parent FD`, started by warm_parent_handle.WarmParent).

A spawned zygote is a new interpreter importing torch inside its sandbox: ~2.5-3 s to its first
answer on a two-core host, paid twice per score and once per row of a batch.  The warm parent
pays it once; for each zygote the scorer asks for, it forks a child that enters that zygote's
sandbox itself (sandbox/entry.py: the namespaces, the cgroup, the same view script, the same
privilege drop, checked) and then serves as the zygote does (zygote.serve).  The zygote's
environment is exactly a spawned one's (the request carries it); so are the thread counts its
OpenMP runtime read at import, because the warm parent is started with the same environment
(warm_parent_handle.py keeps one per thread setting).

What it must never be (docs/security.md, "The warm parent"): reachable by task code.  It runs
nothing of any task and reads no candidate file; it takes requests only on the socket its
scorer made (no path, no port); it is non-dumpable and ignores the signals it can; it holds no
secret (the scorer draws seeds later, in its own process).  It refuses to fork unless it is its
only thread, so a child never starts with a lock some other thread held.

Requests, one JSON message each on a SOCK_SEQPACKET socket:
  zygote {id, env, cgroup_procs, namespaces, view_script, private_dir, uid, gid} + 2 fds (the
         zygote's channel, its log)  -> {id, pid} + a pidfd of the child (the scorer is not its parent)
  exit
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import tempfile
import traceback

from .zygote import leave_child, serve

MAX_REQUEST = 1 << 20   # a view script names every exposed path
ZYGOTE_FDS = 2          # the zygote's channel, its log
_REAP_EVERY_S = 2.0


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _settle_threads() -> None:
    """numpy's OpenBLAS starts its thread pool at import when more than one thread is asked for
    (`[cpu] threads` > 1), stops it before every fork (its pthread_atfork handler) and restarts it
    only on its next call, which this process never makes.  One throwaway fork leaves the warm
    parent with its own thread only; a spawned zygote's pool stops the same way at its first
    fork, so the workers of both kinds of zygote start alike."""
    if _threads() > 1:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)


def _become_zygote(req: dict, fds: list[int], handlers: dict) -> None:
    """In the forked child: into the sandbox the request describes, then serve as a zygote.
    Never returns."""
    code = 1
    try:
        chan_fd, log_fd = fds
        os.setsid()   # its own session and group, as a spawned zygote (start_new_session)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        from ..sandbox.hardening import close_other_fds

        close_other_fds({chan_fd})   # the warm parent's channel above all
        # The environment a spawned zygote starts with: TMPDIR and the caches in its private
        # directory.  What was read from the old one at import is reset.
        os.environ.clear()
        os.environ.update(req["env"])
        tempfile.tempdir = None
        sys.dont_write_bytecode = bool(req["env"].get("PYTHONDONTWRITEBYTECODE"))
        from ..sandbox import entry as entry

        if req["namespaces"]:
            entry.enter_namespaces()   # from here on: PID 1 of the new namespace
        entry.join_cgroup(list(req["cgroup_procs"]))
        if req["namespaces"]:
            entry.build_view(req["view_script"])
            os.chdir(req["private_dir"])
            # as the spawned path's shell leaves them after its `cd` (not the scorer's directory)
            os.environ.update(PWD=req["private_dir"], OLDPWD="/")
            entry.drop_privileges(req["uid"], req["gid"])
            entry.verify_dropped(req["uid"], req["gid"])
        serve(chan_fd, handlers)
        code = 0
    except BaseException:  # noqa: BLE001 - report, then leave without returning into the warm parent
        traceback.print_exc()
    finally:
        leave_child(code)


class _WarmParent:
    def __init__(self, fd: int, handlers: dict):
        self.chan = socket.socket(fileno=fd)
        self.handlers = handlers

    @staticmethod
    def reap() -> None:
        """Every child that has ended (the waiters of zygotes that are gone)."""
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                continue

    def zygote(self, req: dict, fds: list[int]) -> None:
        threads = _threads()
        if threads != 1:
            for fd in fds:
                os.close(fd)
            self._send({"id": req.get("id"), "error": f"the warm parent has {threads} threads; it forks only with one"})
            return
        pid = os.fork()
        if pid == 0:
            self.chan.close()
            _become_zygote(req, fds, self.handlers)   # never returns
        for fd in fds:
            os.close(fd)
        pidfd = os.pidfd_open(pid)   # before any reap: this pid cannot have been reused
        try:
            socket.send_fds(self.chan, [json.dumps({"id": req.get("id"), "pid": pid}).encode()], [pidfd])
        finally:
            os.close(pidfd)

    def _send(self, reply: dict) -> None:
        self.chan.send(json.dumps(reply).encode())

    def serve(self) -> None:
        self.chan.settimeout(_REAP_EVERY_S)
        while True:
            self.reap()
            try:
                msg, fds, _, _ = socket.recv_fds(self.chan, MAX_REQUEST, ZYGOTE_FDS)
            except socket.timeout:
                continue
            except OSError:
                return
            if not msg:
                return   # the scorer went away
            req = json.loads(msg)
            if req.get("op") == "exit":
                return
            if req.get("op") == "zygote" and len(fds) == ZYGOTE_FDS:
                self.zygote(req, fds)
            else:
                for fd in fds:
                    os.close(fd)
                self._send({"id": req.get("id"), "error": f"bad request {req.get('op')!r} with {len(fds)} fds"})


def main(fd: int) -> None:
    from ..sandbox.hardening import harden_process, set_dumpable
    from .zygote import ignore_signals, warm_imports

    harden_process({fd})   # and so every zygote it forks, as a spawned zygote does for itself
    set_dumpable(0)
    handlers = ignore_signals()
    warm_imports()
    _settle_threads()
    _WarmParent(fd, handlers).serve()
    # Nothing to flush or release: a normal exit would only tear torch down (~0.7 s the scorer
    # waited for, on every `perfbench score`).
    os._exit(0)


if __name__ == "__main__":
    main(int(sys.argv[1]))
