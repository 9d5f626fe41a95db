"""Run a batch: rows on row servers (a scorer process per slot, batch/row.py), on local slots
or on Ray actors, each record appended the moment its row finishes.

Local: one slot per visible GPU for CUDA rows, one per `threads` cores for CPU rows; a slot's
scorer process is pinned to its cores (and its device lease, device/lease.py, keeps any other
perfbench measurement off them).  Ray: one actor per `threads` CPUs (or per GPU) of the
cluster, each with its own row server; on each node the device leases keep two rows off one
core or GPU whatever Ray's scheduler does.  Either way a row whose scorer process failed for a
reason of the machine's (it died, hung, or found the device unavailable) is retried in a fresh
scorer process; a candidate's failure is its verdict and is never retried."""
from __future__ import annotations

import dataclasses
import json
import os
import queue
import select
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable

from ..core.errors import UsageError
from .manifest import BatchRow
from .records import BatchRecord, ResultsFile
from .row import RECORD_PREFIX, BatchOptions

BACKENDS = ("local", "ray")
OnRecord = Callable[[BatchRecord], None]


@dataclass(frozen=True)
class Slot:
    """Where one row at a time runs locally: its cores (CPU) or its GPU index."""

    kind: str                   # cpu | cuda
    cpus: tuple[int, ...] = ()
    gpu: int | None = None

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(self.gpu)
        return env


class RowServer:
    """One slot's scorer process (`python -m perfbench.batch.row --serve`): rows in on its stdin,
    records out on its stdout.  Started on first use and again after it died or was killed."""

    def __init__(self, options: BatchOptions, slot: Slot | None = None):
        self.options, self.slot = options, slot
        self.proc: subprocess.Popen | None = None
        self._buf = b""
        self._stderr = tempfile.TemporaryFile()

    def _start(self) -> None:
        cpus = set(self.slot.cpus) if self.slot is not None and self.slot.cpus else None
        self._buf = b""
        self._stderr.seek(0)
        self._stderr.truncate()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "perfbench.batch.row", "--serve", json.dumps(self.options.to_dict())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=self.slot.env() if self.slot is not None else None,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)

    def score(self, row: BatchRow, timeout_s: float) -> tuple[BatchRecord | None, str]:
        """(the row's record, "") or (None, why the scorer process gave none)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        try:
            self.proc.stdin.write((json.dumps(row.to_dict()) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None, self._died()
        deadline = time.monotonic() + timeout_s
        while True:
            line = self._line(deadline)
            if line is None:
                if self.proc.poll() is None:
                    self.kill()
                    return None, f"no record within {timeout_s:g} s"
                return None, self._died()
            if line.startswith(RECORD_PREFIX.encode()):
                try:
                    return BatchRecord.from_dict(json.loads(line[len(RECORD_PREFIX):])), ""
                except (json.JSONDecodeError, KeyError, ValueError, TypeError) as exc:
                    return None, f"unreadable record: {exc}"

    def _line(self, deadline: float) -> bytes | None:
        """The next line of its stdout, or None at its end or the deadline."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return line

    def _died(self) -> str:
        rc = self.proc.wait()
        self._stderr.seek(0)
        return f"scorer process exited {rc}: {_last_line(self._stderr.read().decode(errors='replace'))}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)   # it closes its kept baseline workers
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()


# A row's scorer process is killed (an infrastructure error, retried) when it gives no record in
# this long: past any score's own deadline, which ends a slow candidate as its verdict.
ROW_TIMEOUT_S = 3600.0


def row_timeout_s(options: BatchOptions) -> float:
    return ROW_TIMEOUT_S if options.deadline_s is None else max(ROW_TIMEOUT_S, options.deadline_s + 600.0)


def score_with_retries(server: RowServer, row: BatchRow, retries: int = 2, timeout_s: float = ROW_TIMEOUT_S) -> BatchRecord:
    """The row's record; a failure of the machine's (the scorer process died, the device was
    unavailable) is retried in a fresh scorer process, a candidate's never (a candidate past the
    score's deadline is its verdict, `candidate.timeout`)."""
    for attempt in range(1, retries + 2):
        t0 = time.perf_counter()
        record, why = server.score(row, timeout_s)
        record = (BatchRecord(row.id, row.task, row.candidate, "error", attempt, time.perf_counter() - t0,
                              error_kind="infrastructure", error=why) if record is None
                  else dataclasses.replace(record, attempts=attempt))
        if record.error_kind != "infrastructure":
            return record
        server.kill()   # the next attempt starts from a fresh scorer
    return record


def row_device(row: BatchRow, options: BatchOptions) -> tuple[str, int]:
    """("cpu" | "cuda", CPU threads) of a row's task, from its task.toml."""
    from ..task.spec import load_task, parse_overrides

    spec = load_task(row.task, parse_overrides(row.set))
    device = options.device or spec.device
    return ("cuda" if device.startswith("cuda") else "cpu"), spec.threads


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1][:300] if lines else "(no output)"


def local_slots(threads: int) -> list[Slot]:
    """One CPU slot per `threads` cores this process may use (at least one)."""
    cpus = sorted(os.sched_getaffinity(0))
    slots = [Slot("cpu", tuple(cpus[i:i + threads])) for i in range(0, len(cpus) - threads + 1, threads)]
    return slots or [Slot("cpu", tuple(cpus))]


def gpu_slots() -> list[Slot]:
    try:
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        n = 0
    return [Slot("cuda", gpu=i) for i in range(n)]


def run_local(rows: list[BatchRow], options: BatchOptions, on_record: OnRecord, *, threads: int = 1,
              slots: int | None = None, devices: dict[str, str] | None = None) -> None:
    """Rows on local slots; `devices` maps a row id to "cpu" or "cuda" (default cpu)."""
    cpu = local_slots(threads)[: slots or None]
    kinds = {(devices or {}).get(r.id, "cpu") for r in rows}
    gpus = gpu_slots() if "cuda" in kinds else []
    if "cuda" in kinds and not gpus:
        raise UsageError("the batch has CUDA rows but no CUDA device is visible")
    queues = {"cpu": queue.Queue(), "cuda": queue.Queue()}
    for r in rows:
        queues[(devices or {}).get(r.id, "cpu")].put(r)
    lock = threading.Lock()
    failures: list[BaseException] = []

    def serve(slot: Slot) -> None:
        q, server = queues[slot.kind], RowServer(options, slot)
        try:
            while not failures:
                try:
                    row = q.get_nowait()
                except queue.Empty:
                    return
                rec = score_with_retries(server, row, timeout_s=row_timeout_s(options))
                with lock:
                    on_record(rec)
        except BaseException as exc:  # noqa: BLE001 - stop the others, re-raise below
            failures.append(exc)
        finally:
            server.close()

    workers = [threading.Thread(target=serve, args=(s,), daemon=True) for s in cpu + gpus]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        raise failures[0]


class _RayScorer:
    """A Ray actor holding one row server (its slot: `num_cpus=threads` or `num_gpus=1`)."""

    def __init__(self, options: BatchOptions):
        self.server, self.timeout_s = RowServer(options), row_timeout_s(options)

    def score(self, row: BatchRow) -> BatchRecord:
        return score_with_retries(self.server, row, timeout_s=self.timeout_s)


def run_ray(rows: list[BatchRow], options: BatchOptions, on_record: OnRecord, *, threads: int = 1,
            address: str | None = None, devices: dict[str, str] | None = None) -> None:
    """Rows on Ray actors, one per `threads` CPUs (or per GPU) of the cluster, each keeping a row
    server; records streamed back as they finish.  A local Ray instance unless `address`."""
    try:
        import ray
        from ray.util import ActorPool
    except ImportError:
        raise UsageError("--backend ray needs Ray: pip install 'perfbench[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        resources = ray.cluster_resources()
        by_kind = {"cpu": [r for r in rows if (devices or {}).get(r.id, "cpu") == "cpu"],
                   "cuda": [r for r in rows if (devices or {}).get(r.id) == "cuda"]}
        if by_kind["cuda"] and not resources.get("GPU"):
            raise UsageError("the batch has CUDA rows but the Ray cluster has no GPU")
        pools = []
        for kind, kind_rows in by_kind.items():
            if not kind_rows:
                continue
            n, res = ((int(resources["GPU"]), {"num_gpus": 1}) if kind == "cuda" else
                      (max(1, int(resources.get("CPU", 1) // threads)), {"num_cpus": threads}))
            actor = ray.remote(**res)(_RayScorer)
            pool = ActorPool([actor.remote(options) for _ in range(min(n, len(kind_rows)))])
            for r in kind_rows:
                pool.submit(lambda a, row: a.score.remote(row), r)
            pools.append(pool)
        while any(p.has_next() for p in pools):
            for p in pools:
                if p.has_next():
                    try:
                        on_record(p.get_next_unordered(timeout=0.2))
                    except TimeoutError:
                        pass
    finally:
        if started:
            ray.shutdown()


def run_batch(rows: list[BatchRow], options: BatchOptions, results: ResultsFile, *, backend: str = "local",
              slots: int | None = None, address: str | None = None,
              on_record: OnRecord | None = None) -> list[BatchRow]:
    """Score every row not yet in `results`, appending each record as it finishes.  Returns the
    rows that were skipped because `results` already held them."""
    if backend not in BACKENDS:
        raise UsageError(f"--backend must be one of {'|'.join(BACKENDS)}, got {backend!r}")
    skipped = [r for r in rows if r.id in results.done]

    def record(rec: BatchRecord) -> None:
        results.append(rec)
        if on_record is not None:
            on_record(rec)

    todo, devices, threads = [], {}, 1
    for r in rows:
        if r.id in results.done:
            continue
        try:   # a row whose task cannot load is the user's mistake: recorded, never run
            device, row_threads = row_device(r, options)
        except UsageError as exc:
            record(BatchRecord(r.id, r.task, r.candidate, "error", 0, 0.0, error_kind="usage", error=str(exc)))
            continue
        devices[r.id], threads = device, max(threads, row_threads)
        todo.append(r)
    if todo:
        if backend == "ray":
            run_ray(todo, options, record, threads=threads, address=address, devices=devices)
        else:
            run_local(todo, options, record, threads=threads, slots=slots, devices=devices)
    return skipped
