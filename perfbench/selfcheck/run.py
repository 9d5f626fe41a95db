"""The selfcheck sections.  Each returns a plain dict; `run_selfcheck` assembles the report."""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..pipeline.compare import compare
from ..timing.inprocess import InProcessSide
from ..timing.sampler import SamplerConfig
from ..timing.sequential import sequential_speedup
from .backend import Backend


@dataclass(frozen=True)
class SelfcheckConfig:
    quick: bool = False
    seed: int = 0

    @property
    def reps(self) -> int:
        return 3 if self.quick else 8

    @property
    def pairs(self) -> int:
        return 10 if self.quick else 16

    @property
    def slowdowns(self) -> tuple[float, ...]:
        return (0.05,) if self.quick else (0.01, 0.02, 0.05)

    @property
    def scores(self) -> int:
        """Independent `perfbench score` runs in the run-to-run section."""
        return 3 if self.quick else 5

    @property
    def sensitivity_budget_s(self) -> float:
        return 8.0 if self.quick else 30.0

    def sampler(self, **kw: Any) -> SamplerConfig:
        base = dict(min_pairs=self.pairs, max_pairs=self.pairs, warmup_s=0.05, target_rel_ci=0.0)
        return SamplerConfig(**{**base, **kw})


def timer_section(b: Backend) -> dict[str, Any]:
    fn, make = b.make_kernel("null", 0.0)
    side = InProcessSide("null", fn, make, b.timer)
    side.run_block(100, 0)
    per_call = min(side.run_block(1000, i) for i in range(3))
    return {"timer": b.timer.name, "resolution_ns": b.timer.resolution_ns(), "null_call_ns": per_call}


def cache_section(b: Backend) -> dict[str, Any]:
    fn, make = b.make_kernel("memory", 0.0)
    warm = InProcessSide("warm", fn, make, b.timer)
    out: dict[str, Any] = {"cache_bytes": b.cache_bytes}
    warm.run_block(20, 0)
    out["warm_ns"] = statistics.median(warm.run_block(20, 0) for _ in range(3))
    if b.flusher is not None:
        flush = b.flusher()
        cold = InProcessSide("flushed", fn, make, b.timer, flush)
        out["flushed_ns"] = statistics.median(cold.run_block(20, 0) for _ in range(3))
        t = time.perf_counter_ns()
        for _ in range(10):
            flush()
        out["flush_cost_ns"] = (time.perf_counter_ns() - t) / 10
        out["flushed_over_warm"] = out["flushed_ns"] / out["warm_ns"]
    return out


def noise_section(b: Backend, cfg: SelfcheckConfig) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for kind in ("memory", "compute"):
        fn, make = b.make_kernel(kind, 0.0)
        runs = [compare(fn, fn, make, device=b.device, timer=b.timer, config=cfg.sampler(), seed=cfg.seed + r)
                for r in range(cfg.reps)]
        res[kind] = {
            "median_abs_log_s": statistics.median(abs(math.log(r.speedup)) for r in runs),
            "median_ci_half_width": statistics.median(r.summary.speedup.rel_half_width for r in runs),
            "false_significant_p01": sum(r.p_value < 0.01 for r in runs), "runs": len(runs),
            "pair_ratios": [[b_ / c for b_, c in zip(r.samples.baseline_ns, r.samples.candidate_ns)] for r in runs],
        }
    return res


def drift_section(b: Backend, cfg: SelfcheckConfig) -> dict[str, Any]:
    """A/A with a competing load started half-way: AB-BA vs sequential (all A, then all B)."""
    fn, make = b.make_kernel("memory", 0.0)
    n = cfg.pairs
    with b.load() as load:
        r = compare(fn, fn, make, device=b.device, timer=b.timer, config=cfg.sampler(), seed=cfg.seed,
                    progress=lambda i, _s: load.start() if i == n // 2 else None)
    a, c = (InProcessSide(x, fn, make, b.timer) for x in ("A", "B"))
    with b.load() as load:
        seq = sequential_speedup(a, c, n_blocks=n, iters=r.samples.iters_per_block, seed=cfg.seed,
                                 between=load.start)
    abba_err, seq_err = abs(math.log(r.speedup)), abs(math.log(seq))
    return {"abba_speedup": r.speedup, "sequential_speedup": seq, "abba_err": abba_err, "sequential_err": seq_err,
            "ratio": seq_err / max(abba_err, 1e-6),
            "pair_ratios": [x / y for x, y in zip(r.samples.baseline_ns, r.samples.candidate_ns)]}


def sensitivity_section(b: Backend, cfg: SelfcheckConfig) -> dict[str, Any]:
    base_fn, make = b.make_kernel("memory", 0.0)
    out = {}
    for extra in cfg.slowdowns:
        slow_fn, _ = b.make_kernel("memory", extra)
        hit: dict[str, Any] = {}
        t0 = time.perf_counter()

        def watch(n, s):   # (s: the sampler's quick 95% CI after each pair; 8 pairs at least)
            if s is not None and not hit and n >= 8 and s.high < 1.0:
                hit.update(pairs=n, seconds=time.perf_counter() - t0)

        compare(base_fn, slow_fn, make, device=b.device, timer=b.timer, seed=cfg.seed, progress=watch,
                config=SamplerConfig(min_pairs=8, max_pairs=400, warmup_s=0.05, target_rel_ci=0.0,
                                     time_budget_s=cfg.sensitivity_budget_s))
        out[f"{extra:.0%}"] = {"detected": bool(hit), **hit}
    return out


def verdict(sections: dict[str, Any]) -> str:
    found = [(float(k.rstrip("%")), v["seconds"]) for k, v in sections["sensitivity"].items() if v["detected"]]
    noise = sections["noise"]["memory"]["median_abs_log_s"] * 100
    drift = sections["drift"]["ratio"]
    if not found:
        return (f"this machine did not resolve a {max(sections['sensitivity'])} difference within the budget "
                f"(A/A noise {noise:.2f}%): do not publish small speedups from it")
    pct, secs = min(found)
    return (f"this machine resolves ~{pct:g}% differences in {secs:.0f} s (A/A noise {noise:.2f}%, "
            f"AB-BA {drift:.0f}x more robust to drift than sequential timing)")


def run_selfcheck(b: Backend, cfg: SelfcheckConfig, *, env: Callable[[], dict] | None = None,
                  tasks: Callable[[], dict] | None = None, run_to_run: Callable[[], dict] | None = None,
                  say: Callable[[str], None] = lambda m: None) -> dict:
    report: dict[str, Any] = {"device": b.device, "quick": cfg.quick}
    t0 = time.perf_counter()
    for name, fn in (("timer", lambda: timer_section(b)), ("cache", lambda: cache_section(b)),
                     ("noise", lambda: noise_section(b, cfg)), ("drift", lambda: drift_section(b, cfg)),
                     ("sensitivity", lambda: sensitivity_section(b, cfg)),
                     ("clocks", env or (lambda: {})), ("tasks", tasks or (lambda: {})),
                     ("run_to_run", run_to_run or (lambda: {}))):
        say(f"selfcheck: {name}")
        report[name] = fn()
    report["seconds"] = time.perf_counter() - t0
    report["verdict"] = verdict(report)
    return report


def plot(report: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for kind, style in (("memory", "-"), ("compute", "--")):
        for i, ratios in enumerate(report["noise"][kind]["pair_ratios"]):
            ax1.plot(ratios, style, alpha=0.6, label=kind if i == 0 else None)
    ax1.axhline(1.0, color="k", lw=0.8)
    ax1.set(title="A/A: per-pair ratio t_A/t_A'", xlabel="pair", ylabel="ratio")
    ax1.legend()
    d = report["drift"]
    ax2.plot(d["pair_ratios"], "o-", label=f"AB-BA pairs (s={d['abba_speedup']:.3f})")
    ax2.axhline(d["sequential_speedup"], color="r", ls="--", label=f"sequential (s={d['sequential_speedup']:.3f})")
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.axvline(len(d["pair_ratios"]) / 2, color="grey", ls=":", label="load starts")
    ax2.set(title="A/A under a load step", xlabel="pair", ylabel="ratio")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
