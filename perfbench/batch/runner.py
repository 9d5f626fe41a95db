"""Run a batch: rows in fresh scorer processes, on local slots or as Ray tasks, each record
appended the moment its row finishes.

Local: one slot per visible GPU for CUDA rows, one per `threads` cores for CPU rows; a slot's
scorer process is pinned to its cores (and its device lease, device/lease.py, keeps any other
perfbench measurement off them).  Ray: each row is a task asking for `num_gpus=1` or
`num_cpus=threads`; on each node the device leases keep two rows off one core or GPU whatever
Ray's scheduler does.  Either way a row whose scorer process failed for a reason of the
machine's (it died, the device was unavailable) is retried up to `retries` times; a candidate's
failure is its verdict and is never retried."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable

from ..errors import UsageError
from .manifest import BatchRow
from .records import BatchRecord, ResultsFile
from .row import BatchOptions

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


def run_row_process(row: BatchRow, options: BatchOptions, slot: Slot | None = None, retries: int = 2,
                    timeout_s: float = 3600.0) -> BatchRecord:
    """Score `row` in a fresh scorer process; retry when the machine, not the candidate, failed."""
    record = None
    for attempt in range(1, retries + 2):
        t0 = time.perf_counter()
        cpus = set(slot.cpus) if slot is not None and slot.cpus else None
        try:
            proc = subprocess.run([sys.executable, "-m", "perfbench.batch.row", json.dumps(row.to_dict()),
                                   json.dumps(options.to_dict())], capture_output=True, text=True, timeout=timeout_s,
                                  env=slot.env() if slot is not None else None,
                                  preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
            lines = proc.stdout.strip().splitlines()
            record = BatchRecord.from_dict(json.loads(lines[-1])) if proc.returncode == 0 and lines else None
            why = "" if record else f"scorer process exited {proc.returncode}: {_last_line(proc.stderr)}"
        except (subprocess.TimeoutExpired, json.JSONDecodeError, KeyError, ValueError) as exc:
            record, why = None, f"scorer process: {type(exc).__name__}: {exc}"
        if record is None:
            record = BatchRecord(row.id, row.task, row.candidate, "error", attempt, time.perf_counter() - t0,
                                 error_kind="infrastructure", error=why)
        else:
            record = BatchRecord(**{**record.__dict__, "attempts": attempt})
        if record.error_kind != "infrastructure":
            return record
    return record


def row_device(row: BatchRow, options: BatchOptions) -> tuple[str, int]:
    """("cpu" | "cuda", CPU threads) of a row's task, from its task.toml."""
    from ..tasks import load_task

    spec = load_task(row.task)
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
        q = queues[slot.kind]
        while not failures:
            try:
                row = q.get_nowait()
            except queue.Empty:
                return
            try:
                rec = run_row_process(row, options, slot)
                with lock:
                    on_record(rec)
            except BaseException as exc:  # noqa: BLE001 - stop the others, re-raise below
                failures.append(exc)
                return

    workers = [threading.Thread(target=serve, args=(s,), daemon=True) for s in cpu + gpus]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if failures:
        raise failures[0]


def run_ray(rows: list[BatchRow], options: BatchOptions, on_record: OnRecord, *, threads: int = 1,
            address: str | None = None, devices: dict[str, str] | None = None) -> None:
    """Rows as Ray tasks (a local instance unless `address`), records streamed as they finish."""
    try:
        import ray
    except ImportError:
        raise UsageError("--backend ray needs Ray: pip install 'perfbench[ray]'") from None
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(max_retries=0)(run_row_process)
    try:
        pending = {}
        for r in rows:
            res = {"num_gpus": 1} if (devices or {}).get(r.id) == "cuda" else {"num_cpus": threads}
            pending[remote.options(**res).remote(r, options)] = r
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                pending.pop(ref)
                on_record(ray.get(ref))
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
