"""The worker process: loads one side (baseline or candidate) and answers requests.

A fresh interpreter (`python -m perfbench.isolation.processes.worker FD`) or a fork of a zygote that has
imported torch and nothing of the task (zygote.py), never a fork of the scorer: it inherits only
its socket, its arenas and a log file as stdout/stderr (so nothing the candidate prints can pass
for the scorer's verdict), and captures the integrity tripwires before any task code loads.
"""
from __future__ import annotations

import sys
from typing import Callable

from .arena_requests import ArenaRequests
from .own_input_requests import OwnInputRequests
from .worker_state import WorkerState


def main(fd: int, arena_fds: tuple[int, ...] = ()) -> None:
    """Serve requests on socket `fd` until told to exit or the scorer goes away.

    Started by `WorkerClient` as ``python -m perfbench.isolation.processes.worker FD`` with stdout/stderr
    already pointing at a log file and its own session (process group).
    """
    from ..sandbox.hardening import harden_process

    harden_process({fd, *arena_fds})
    serve(fd, arena_fds)


def handlers(side: WorkerState, probe: Callable[[], dict], arena_fds: tuple[int, ...] = ()) -> dict:
    """What answers each request (`Op`) but EXIT, which `serve` answers itself: the loaded side's
    LOAD, the arena's requests (CPU) and the requests on inputs this worker makes (CUDA), as the
    Op enum groups them."""
    from ..wire.protocol import Op

    arena, own = ArenaRequests(side, arena_fds), OwnInputRequests(side)
    return {Op.PING: lambda req: ({"ok": True}, []), Op.PROBE: lambda req: ({"ok": True, "probe": probe()}, []),
            Op.LOAD: side.load,
            Op.MAP: arena.map, Op.STAGE: arena.stage, Op.RUN: arena.run, Op.GATE_CALL: arena.gate_call,
            Op.CHECK: own.check, Op.PREPARE: own.prepare, Op.TIME: own.time, Op.FETCH: own.fetch,
            Op.SET_MODE: own.set_mode, Op.PROFILE: own.profile}


def serve(fd: int, arena_fds: tuple[int, ...]) -> None:
    """The request loop of a worker: a fresh interpreter's (`main`), or a forked one's (zygote.py)."""
    import json
    from multiprocessing.connection import Connection

    from ...core.errors import CandidateRejected, PerfbenchError
    from ..sandbox.hardening import adopt_orphans
    from ..wire.protocol import Op, send

    adopt_orphans()
    conn = Connection(fd)
    side = WorkerState()   # imports torch: unpinned, so the two workers import side by side
    from .cpu_threads import pin_from_env

    pin_from_env()   # before any task code runs, and before torch's thread pool starts (lazily)
    from ..sandbox.plan import probe

    answer = handlers(side, probe, arena_fds)
    while True:
        try:
            req = json.loads(conn.recv_bytes())
        except EOFError:
            return
        op = req.get("op")
        if op == Op.EXIT:
            send(conn, {"id": req.get("id"), "ok": True})
            return
        try:
            reply, blobs = answer[op](req)
        except CandidateRejected as exc:
            reply, blobs = {"error": exc.reason, "message": exc.message}, []
        except PerfbenchError as exc:
            reply, blobs = {"error": "usage", "message": str(exc)}, []
        except Exception as exc:  # noqa: BLE001 - whatever the loaded code provoked, answer
            from ...task.user_files import describe_exception

            reply, blobs = {"error": "worker.error", "message": f"'{op}' failed: {describe_exception(exc)}"}, []
        send(conn, dict(reply, id=req.get("id")), blobs)


if __name__ == "__main__":
    main(int(sys.argv[1]), tuple(int(x) for x in sys.argv[2:]))
