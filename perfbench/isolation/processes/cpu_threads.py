"""CPU threading of a worker: how many threads, on which cores, with which OpenMP wait policy.

Part of the task (`[cpu] threads`, `[cpu] omp_wait_policy` in task.toml) and applied identically
to both sides: the thread-count variables are in the worker's environment before its interpreter
starts (OpenMP reads them once), the worker calls `torch.set_num_threads` and pins itself to
the same cores once torch is imported, before any task code loads.  The wait policy is the runtime's default
unless the task sets one: the idle side is frozen while the other is timed, so its threads
cannot spin on the timed side's cores whatever the policy (docs/verdict.md).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...system.host import openmp_runtime

# Variables that size a thread pool: all set to the task's thread count.
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# Variables that change how the OpenMP runtime waits: never taken from the scorer's environment
# (isolation/processes/worker_client.py removes them); the task may set the policy.  Recorded in the verdict.
WAIT_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")
CPUS_VAR = "PERFBENCH_CPUS"


@dataclass(frozen=True)
class CpuThreading:
    threads: int
    cpus: tuple[int, ...]               # the cores both workers are pinned to
    omp_wait_policy: str | None = None  # None: the OpenMP runtime's default

    @classmethod
    def for_task(cls, threads: int, omp_wait_policy: str | None = None,
                 cpus: tuple[int, ...] | None = None) -> "CpuThreading":
        """`threads` threads on `cpus` (a device lease's cores), else on the first `threads` cores
        this process may use (all of them when there are fewer: a warning in the verdict says so)."""
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if cpus is None:
            cpus = tuple(sorted(os.sched_getaffinity(0))[:threads])
        return cls(threads, tuple(cpus), omp_wait_policy)

    @property
    def oversubscribed(self) -> bool:
        return len(self.cpus) < self.threads

    def spare_cores(self) -> tuple[int, ...]:
        """The cores this process may use that the workers are not pinned to: where the scorer's
        own work between blocks leaves the workers' caches alone."""
        return tuple(sorted(set(os.sched_getaffinity(0)) - set(self.cpus)))

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """The worker's environment: thread counts, cores, and the task's wait policy if any."""
        env = dict(base)
        for var in THREAD_VARS:
            env[var] = str(self.threads)
        env[CPUS_VAR] = ",".join(map(str, self.cpus))
        if self.omp_wait_policy is not None:
            env["OMP_WAIT_POLICY"] = self.omp_wait_policy.upper()
        return env

    def runtime_key(self) -> tuple[int, str | None]:
        """What the OpenMP runtime reads from the environment once, when torch is imported: two
        settings with the same key may share a warm parent (warm_parent_handle.py); the cores may differ."""
        return self.threads, self.omp_wait_policy

    def to_dict(self) -> dict[str, Any]:
        env = self.env({})
        return {"threads": self.threads, "cpus": list(self.cpus),
                "omp_wait_policy": env.get("OMP_WAIT_POLICY", "runtime default"),
                "wait_env": {v: env[v] for v in WAIT_VARS if v in env},
                "openmp_runtime": openmp_runtime()}


def pin_from_env() -> None:
    """In the worker, before any task code: pin every thread it has to the cores the scorer
    chose (no-op without).  Threads started later (torch's pool) inherit the pinning."""
    spec = os.environ.get(CPUS_VAR)
    if not spec:
        return
    try:
        cpus = {int(c) for c in spec.split(",")}
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except (OSError, ValueError):
        return
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:
            pass   # the probe records the affinity the worker really has
