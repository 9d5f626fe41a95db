"""Cost of the trust boundary: scoring through worker processes vs trusted in-process timing.

A ~1 ms CPU kernel (baseline and candidate the same function) is timed (a) in-process with
perfbench.compare and (b) through `score` with both sides in worker processes, with the same
number of pairs, the workers started each of three ways (MODES).  Prints wall time of each and the ratio; also the speedups each reports (both
should be ~1.0).
"""
import tempfile
import textwrap
import time
from pathlib import Path

import torch

import perfbench
from perfbench.isolation.processes.cpu_threads import CpuThreading
from perfbench.isolation.processes.warm_parent_handle import WarmParents
from perfbench.isolation.sandbox.plan import LAYERS
from perfbench.pipeline.score import ScoreConfig, score
from perfbench.timing.sampler import SamplerConfig

N = 1 << 18  # ~1 ms for the kernel below on one 2-core VM
# How each side's workers start: new interpreters; forked from zygotes spawned per score; forked
# from zygotes that this process's kept warm parent forked (the default).
MODES = {"fresh": dict(fork_workers=False), "forked, spawned zygotes": dict(warm_parent=False),
         "forked, kept warm parent": dict(warm_parent=True)}
KERNEL = """
import torch

def kernel(x):
    return torch.sin(x).cumsum(0)
"""


def make_task(root: Path) -> Path:
    task = root / "one_ms"
    task.mkdir()
    (task / "task.toml").write_text('kind = "perf"\ndevice = "cpu"\n[inputs]\nsizes = ["only"]\n'
                                    '[timing]\npairs = 10\ns_ref = 1.2\n[tolerance]\nrtol = 1e-3\natol = 1e-3\n')
    (task / "inputs.py").write_text(textwrap.dedent(f"""
        import torch

        def make_inputs(seed, size):
            return (torch.randn({N}, generator=torch.Generator().manual_seed(seed)),)
    """))
    (task / "reference.py").write_text("import torch\n\ndef reference(x):\n    return torch.sin(x).cumsum(0)\n")
    for role in ("baseline", "solution", "candidate"):
        (task / f"{role}.py").write_text(KERNEL)
    return task


def worker_startup_ms(sandbox: bool, reps: int = 3) -> float:
    """Median ms from spawning an untrusted worker until it answers its first request."""
    from perfbench.isolation.processes.worker_client import WorkerClient

    times = []
    for _ in range(reps):
        with WorkerClient("candidate", untrusted=True, sandbox=sandbox) as w:
            w.start(120)
            times.append(w.startup_s * 1e3)
    return sorted(times)[len(times) // 2]


def forked_startup_ms(reps: int = 3) -> float:
    """Median ms from asking a sandboxed zygote for a worker until it answers its first request."""
    from perfbench.isolation.processes.worker_client import WorkerClient
    from perfbench.isolation.processes.fork_server import ForkServer

    times = []
    with ForkServer("candidate", untrusted=True) as server:
        server.start(120)
        for _ in range(reps):
            with WorkerClient("candidate", untrusted=True, server=server) as w:
                w.start(120)
                times.append(w.startup_s * 1e3)
    return sorted(times)[len(times) // 2]


def main() -> None:
    sampler = SamplerConfig(min_pairs=10, max_pairs=10, warmup_s=0.1, min_block_s=0.01)
    with tempfile.TemporaryDirectory() as tmp:
        task = make_task(Path(tmp))
        ns = {}
        exec(KERNEL, ns)
        fn = ns["kernel"]
        make = lambda seed: (torch.randn(N, generator=torch.Generator().manual_seed(seed)),)  # noqa: E731
        t = time.perf_counter()
        r = perfbench.compare(fn, fn, make, config=sampler, seed=1)
        t_in = time.perf_counter() - t
        per_call = sorted(r.samples.baseline_ns)[len(r.samples.baseline_ns) // 2]
        # This process's warm parent, started before any score is timed: what a process that
        # scores many candidates has (its first score pays the start, ~one torch import).
        WarmParents.shared().get(CpuThreading.for_task(1))
        isolated = {}
        for processes in (1, ScoreConfig().processes):
            for mode in MODES:
                t = time.perf_counter()
                s = score(task, task / "candidate.py", ScoreConfig(sampler=sampler, seed=1, processes=processes,
                                                                   stop_early=False, **MODES[mode]))
                isolated[processes, mode] = (time.perf_counter() - t, s)
                assert s.verdict == "scored", s.reasons
    print(f"\nIsolation overhead, A/A on a {per_call / 1e6:.2f} ms CPU kernel, 10 pairs, >= 10 ms blocks")
    print(f"  {'mode':<50} {'wall s':>8} {'speedup':>8} {'ratio':>7}")
    print(f"  {'in-process compare()':<50} {t_in:>8.2f} {r.speedup:>8.3f} {1:>6.2f}x")
    for (processes, mode), (t_iso, s) in isolated.items():
        label = f"isolated score(), {processes} process{'es' if processes > 1 else ''}, {mode}"
        print(f"  {label:<50} {t_iso:>8.2f} {s.comparison.speedup:>8.3f} {t_iso / t_in:>6.2f}x")
    print("  (isolated: per process 2 workers started or forked, the gate, timed-output checks)")
    bare, boxed = worker_startup_ms(False), worker_startup_ms(True)
    print(f"  worker start-up (spawn to first answer, median of 3): {bare:.0f} ms bare, {boxed:.0f} ms sandboxed "
          f"(+{boxed - bare:.0f} ms for cgroup + namespaces + mounts + uid)")
    print(f"  forked worker start-up (fork to first answer, median of 3): {forked_startup_ms():.0f} ms sandboxed")
    iso = s.isolation
    layers = [k for k in LAYERS if iso.get(k)]
    print(f"  candidate worker (forked): answering in {iso.get('startup_ms')} ms, its zygote in "
          f"{iso.get('zygote_startup_ms')} ms; layers: {', '.join(layers) or 'none'}")


if __name__ == "__main__":
    main()
