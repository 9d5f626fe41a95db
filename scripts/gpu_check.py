"""One-command device check for a borrowed GPU (< 5 minutes).  NEVER changes clocks, power
limits, persistence or compute mode: the clock lock runs only in its dry-run (verify) mode.

    python scripts/gpu_check.py [--out DIR]

Exercises: NVML read paths (by PCI bus id), the Monitor over real blocks, the clock lock in
dry-run mode, CUDA event timing with the L2 flush, an A/A and a 2x comparison through
`compare`, and `score` on the tiny test task on CUDA.  Writes details to DIR/gpu_check.json and
prints a short table last.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch

    import perfbench
    from perfbench.device.clocks import ClockLock, ClockRequest
    from perfbench.device.monitor import Monitor
    from perfbench.device.session import connect, describe
    from perfbench.pipeline.score import ScoreConfig, score
    from perfbench.timing.sampler import SamplerConfig

    rows, details = [], {}

    def step(name, fn):
        t = time.perf_counter()
        try:
            value = fn()
            details[name] = value
            rows.append((name, "ok", f"{time.perf_counter() - t:.1f}s", _short(value)))
        except Exception as exc:  # noqa: BLE001 - a check script reports every failure and goes on
            details[name] = {"error": traceback.format_exc()}
            rows.append((name, "FAIL", f"{time.perf_counter() - t:.1f}s", f"{type(exc).__name__}: {exc}"[:80]))

    if not torch.cuda.is_available():
        print("no CUDA device")
        return 2
    step("nvml_describe", lambda: describe("cuda"))
    nvml, bus, why = connect("cuda")

    def monitor_blocks():
        mon = Monitor(nvml, nvml.handle(bus))
        a = torch.randn(4096, 4096, device="cuda")
        seen = []
        for _ in range(5):
            mon.begin()
            for _ in range(20):
                a = torch.tanh(a @ a)
            torch.cuda.synchronize()
            seen.append(mon.end().to_dict())
        return seen
    step("monitor", monitor_blocks)

    def dry_run_lock():
        with ClockLock(nvml, bus, ClockRequest("base", dry_run=True), unavailable_reason=why) as lock:
            return lock.control.to_dict()
    step("clock_lock_dry_run", dry_run_lock)

    def make(seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return (torch.randn(1 << 24, device="cuda", generator=g),)

    def aa():
        r = perfbench.compare(lambda x: x * 2, lambda x: x * 2, make, device="cuda", seed=1,
                              config=SamplerConfig(min_pairs=10, max_pairs=20))
        return {"speedup": r.speedup, "ci": r.ci, "p": r.p_value, "n": r.samples.n_pairs}
    step("compare_aa_cuda", aa)

    def two_x():
        r = perfbench.compare(lambda x: (x * 2) * 2, lambda x: x * 4, make, device="cuda", seed=2,
                              config=SamplerConfig(min_pairs=10, max_pairs=20))
        return {"speedup": r.speedup, "ci": r.ci, "p": r.p_value}
    step("compare_2x_cuda", two_x)

    def score_tiny():
        r = score(REPO / "tests" / "fixtures" / "tiny_task", REPO / "tests" / "fixtures" / "candidates" / "honest_fast.py",
                  ScoreConfig(device="cuda", clocks=ClockRequest("base", dry_run=True),
                              sampler=SamplerConfig(min_pairs=6, max_pairs=10)))
        # The candidate's worker runs sandboxed (allow-list root, read-only mounts, uid nobody, own
        # namespaces, frozen while the baseline is timed) in 3 fresh worker pairs: this is where
        # it first meets a real CUDA device (/dev/nvidia* as nobody; no cpuset: null on CUDA).
        return {"verdict": r.verdict, "speedup": r.comparison.speedup if r.comparison else None,
                "clock_control": r.clock_control, "reasons": [x.code for x in r.reasons],
                "sandbox_missing": r.isolation.get("missing"), "worker_uid": r.isolation.get("worker_uid"),
                "cpuset": r.isolation.get("cpuset"), "processes": sorted(set(r.comparison.samples.processes))
                if r.comparison else None, "warnings": list(r.warnings),
                "candidate_log": r.worker_logs.get("candidate", "")[-1000:]}
    step("score_tiny_cuda", score_tiny)

    (out / "gpu_check.json").write_text(json.dumps(details, indent=2, default=str))
    print(f"\n{'check':<22} {'result':<6} {'time':>6}  detail")
    for name, res, t, detail in rows:
        print(f"{name:<22} {res:<6} {t:>6}  {detail}")
    return 0 if all(r[1] == "ok" for r in rows) else 1


def _short(v) -> str:
    if isinstance(v, dict):
        keys = ("status", "speedup", "verdict", "sm_mhz", "reason", "p")
        return ", ".join(f"{k}={v[k]:.3g}" if isinstance(v[k], float) else f"{k}={v[k]}" for k in keys if k in v)[:80]
    if isinstance(v, list):
        return f"{len(v)} blocks, throttled={sum(1 for b in v if b.get('throttled'))}"
    return str(v)[:80]


if __name__ == "__main__":
    sys.exit(main())
