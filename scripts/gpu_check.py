"""One-command device check for a borrowed GPU (< 5 minutes).  NEVER changes clocks, power
limits, persistence or compute mode: the clock lock runs only in its dry-run (verify) mode.

    python scripts/gpu_check.py [--out DIR]

Exercises the CUDA timer (timing/cuda/timer.py) against the previous one (a device-wide synchronize
inside the events; re-implemented here as `SyncInWindowTimer` for comparison):
  - timer linearity: `torch.cuda._sleep(cycles)` and an in-place elementwise kernel at sizes of
    ~2, 5, 10, 50, 500 us; each size's time over the 500 us size's, against the work ratio;
  - a 2x comparison at 5-10 us and A/A at 5 and 50 us through `compare`; graph mode at 2 us;
  - the hold's timeout (a call that synchronises), side-stream calls found in a profile, the
    host clock beside the events, the L2 flush (warm vs flushed read), the clock probe vs NVML;
  - NVML reads, the monitor, the clock lock in dry-run mode; `perfbench peaks` on CUDA (#61);
  - `score` through sandboxed workers: honest, side-stream (x2), synchronising, current-stream;
    a live s_ref (the solution a third worker); a GPU MODE problem, right and wrong; a
    SOL-ExecBench problem (#62): a DPS solution, a wrong one and one that writes nothing.
Writes DIR/gpu_check.json after every step and prints a short table last.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import runpy
import statistics
import sys
import threading
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# Scores through workers start only while this much of the check's time is left.
DEADLINE_S = 250.0
SIZES_US = (2, 5, 10, 50, 500)


class SyncInWindowTimer:
    """The previous CudaEventTimer: a device-wide synchronize between the call and its end event."""

    name = "cuda_events_sync_in_window"

    def __init__(self, torch):
        self.torch = torch

    def time_block(self, fn, inputs, flush):
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in inputs]
        ends = [torch.cuda.Event(enable_timing=True) for _ in inputs]
        outs = []
        torch.cuda.synchronize()
        for i, args in enumerate(inputs):
            if flush is not None:
                flush()
            starts[i].record()
            outs.append(fn(*args))
            torch.cuda.synchronize()
            ends[i].record()
        torch.cuda.synchronize()
        from perfbench.timing.timers import BlockTiming
        return BlockTiming(sum(s.elapsed_time(e) for s, e in zip(starts, ends)) * 1e6, tuple(outs))

    def clock_s(self):
        return time.perf_counter()

    def resolution_ns(self):
        return 500.0


def per_call_us(timer, fn, flush=None, calls=40, reps=5) -> float:
    timer.time_block(fn, [()] * 5, flush)   # warm
    return statistics.median(timer.time_block(fn, [()] * calls, flush).total_ns / calls for _ in range(reps)) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device")
        return 2
    import perfbench
    from perfbench.device.clocks import ClockLock, ClockRequest
    from perfbench.device.device_session import connect, describe
    from perfbench.device.monitor import Monitor
    from perfbench.pipeline.score import ScoreConfig, score
    from perfbench.timing.cuda.timer import CudaEventTimer
    from perfbench.timing.flush import cuda_l2_flusher
    from perfbench.timing.sampler import SamplerConfig
    from perfbench.timing.cuda.side_streams import outside_window, profile_timed_call

    rows, details = [], {}

    def save():
        (out / "gpu_check.json").write_text(json.dumps(details, indent=2, default=str))

    only = os.environ.get("GPU_CHECK_ONLY")   # e.g. "score": rerun only the steps named so

    def step(name, fn, short=None):
        if only and not any(name.startswith(o) for o in only.split(",")):
            return
        t = time.perf_counter()
        try:
            value = fn()
            details[name] = value
            rows.append((name, "ok", f"{time.perf_counter() - t:.1f}s", (short or _short)(value)))
        except Exception as exc:  # noqa: BLE001 - a check script reports every failure and goes on
            details[name] = {"error": traceback.format_exc()}
            rows.append((name, "FAIL", f"{time.perf_counter() - t:.1f}s", f"{type(exc).__name__}: {exc}"[:90]))
        save()
        print(f"[{time.perf_counter() - t_start:6.1f}s] {rows[-1]}", flush=True)

    props = torch.cuda.get_device_properties(0)
    details["env"] = {"torch": torch.__version__, "device": props.name, "sms": props.multi_processor_count,
                      "l2_bytes": getattr(props, "L2_cache_size", None), "python": sys.version.split()[0]}
    with contextlib.suppress(ImportError):
        import triton
        details["env"]["triton"] = triton.__version__
    # Which bench_configs files this host's scores look up (a GPU host's CPU is keyed by family
    # and model when its name has no part number): the GPU config, and the CPU one for the host.
    from perfbench.device.fingerprint import describe_cpu, fingerprint
    from perfbench.task import bench_configs
    fp = fingerprint("cuda")
    details["env"].update(cpu=describe_cpu(fp["host"]), gpu_config=bench_configs.device_key("cuda", fp),
                          cpu_config=bench_configs.device_key("cpu", fp, 1))
    print(details["env"], flush=True)

    # A watchdog: should the hold never time out (a bug), release it from here after 5 s so the
    # check reports the failure instead of hanging the lease.
    holders = []

    def watchdog():
        while True:
            time.sleep(5.0)
            for gpu in holders:
                if gpu._release.value == 0 and getattr(gpu, "_held_since", None) and time.perf_counter() - gpu._held_since > 5:
                    gpu._release.value = 1
                    details.setdefault("watchdog_released", 0)
                    details["watchdog_released"] += 1
    threading.Thread(target=watchdog, daemon=True).start()

    new = {}

    def watched(**kw):
        tm = CudaEventTimer("cuda", **kw)
        gpu = tm._gpu
        orig_hold = gpu.hold

        def hold():
            gpu._held_since = time.perf_counter()
            orig_hold()
        gpu.hold = hold
        holders.append(gpu)
        return tm

    def build_timer():
        t = time.perf_counter()
        timer = watched()
        gpu = timer._gpu
        x = torch.randn(1 << 20, device="cuda")
        blk = timer.time_block(lambda: x.mul_(1.0), [()] * 3, None)
        new["timer"] = timer
        return {"build_s": round(time.perf_counter() - t, 2), "per_call_us": blk.total_ns / 3e3,
                "host_us": blk.host_ns / 3e3, "mode": blk.mode, "fallback": timer.fallback,
                "persisting_l2_reset": gpu.persisting_l2_reset}
    step("timer_build", build_timer)
    timer = new.get("timer")
    old = SyncInWindowTimer(torch)

    def probe():
        nvml, bus, why = connect("cuda")
        mhz = [round(timer.clock_mhz(), 1) for _ in range(5)]
        nv = None
        if nvml is not None:
            nv = nvml.read(nvml.handle(bus)).sm_mhz
        return {"probe_mhz": mhz, "nvml_sm_mhz": nv, "nvml_why": why}
    def peaks():   # #61: the CUDA path of `perfbench peaks` and of a score's speed-of-light bound
        from perfbench.device.peaks import bound_peaks, measure_peaks

        report = measure_peaks("cuda", 1, quick=True).to_dict()
        return {"peaks": report, "bound": bound_peaks("cuda", 1, 64 << 20, "float32")}

    step("peaks", peaks, lambda v: f"DRAM copy {v['bound']['bandwidth_bytes_s'] / 1e9:.0f} GB/s, GEMM " + ", ".join(
        f"{g['dtype']} {g['value'] / 1e12:.1f}T" for g in v["peaks"]["gemm"]))
    step("clock_probe", probe, lambda v: f"probe {v['probe_mhz'][-1]} MHz, nvml {v['nvml_sm_mhz']} MHz")
    mhz = details.get("clock_probe", {}).get("probe_mhz", [1980.0])[-1] if "error" not in details.get("clock_probe", {}) else 1980.0

    def linearity_sleep():
        res = {"mhz": mhz, "floor": {}}
        cycles = {us: int(us * mhz) for us in SIZES_US}
        res["floor"] = {"new": per_call_us(timer, lambda: torch.cuda._sleep(0)),
                        "old": per_call_us(old, lambda: torch.cuda._sleep(0))}
        for name, tm in (("new", timer), ("old", old)):
            res[name] = {us: per_call_us(tm, lambda c=c: torch.cuda._sleep(c), calls=40 if us < 100 else 10)
                         for us, c in cycles.items()}
        return _ratio_errors(res, cycles)
    step("linearity_sleep", linearity_sleep, _linearity_short)

    def linearity_elementwise():
        flush = cuda_l2_flusher("cuda")
        # ~4.3 TB/s copy bandwidth (read + write 8 bytes per float32 element in place).
        elems = {us: max(1024, int(us * 1e-6 * 4.3e12 / 8)) for us in SIZES_US}
        bufs = {us: torch.randn(n, device="cuda") for us, n in elems.items()}
        res = {"floor": {"new": per_call_us(timer, lambda: torch.cuda._sleep(0), flush=flush),
                         "old": per_call_us(old, lambda: torch.cuda._sleep(0), flush=flush)}}
        for name, tm in (("new", timer), ("old", old)):
            res[name] = {us: per_call_us(tm, lambda b=b: b.mul_(1.0), flush=flush, calls=20 if us < 100 else 10)
                         for us, b in bufs.items()}
        return _ratio_errors(res, elems)
    step("linearity_elementwise", linearity_elementwise, _linearity_short)

    def graph_mode():
        g = watched(mode="graph")
        c = int(2 * mhz)
        ev = per_call_us(timer, lambda: torch.cuda._sleep(c))
        gr = per_call_us(g, lambda: torch.cuda._sleep(c))
        return {"events_us": ev, "graph_us": gr, "work_us": c / mhz, "fallback": g.fallback}
    step("graph_mode_2us", graph_mode, lambda v: f"work {v['work_us']:.2f}us: events {v['events_us']:.2f}, "
         f"graph {v['graph_us']:.2f}, fallback={v['fallback']}")

    def make_sleep(us):
        c = int(us * mhz)
        return lambda: torch.cuda._sleep(c)

    def cmp(base_fn, cand_fn, tm, seed):
        r = perfbench.compare(base_fn, cand_fn, lambda s: (), device="cuda", timer=tm, seed=seed,
                              config=SamplerConfig(min_pairs=10, max_pairs=20, warmup_s=0.1, time_budget_s=5))
        period = r.summary.period   # (#38: the first block of a pair against the second, removed from each ratio)
        return {"speedup": r.speedup, "ci": list(r.ci), "abs_ln_s": abs(math.log(r.speedup)), "n": r.samples.n_pairs,
                "first_over_second": period.first_over_second if period else None,
                "period_p": period.p_value if period else None, "warnings": list(r.warnings)}

    step("two_x_10us_vs_5us", lambda: {"new": cmp(make_sleep(10), make_sleep(5), timer, 1),
                                       "old": cmp(make_sleep(10), make_sleep(5), old, 1)},
         lambda v: f"true 2.0: new {v['new']['speedup']:.3f}, old {v['old']['speedup']:.3f}")
    for us in (5, 50):
        step(f"aa_{us}us", lambda us=us: cmp(make_sleep(us), make_sleep(us), timer, 2),
             lambda v: (f"s={v['speedup']:.4f} CI [{v['ci'][0]:.4f}, {v['ci'][1]:.4f}] |ln s|={v['abs_ln_s']:.4f} "
                        f"first/second={v['first_over_second'] or float('nan'):.4f}"))

    x = torch.randn(1 << 16, device="cuda")
    y = torch.randn(1 << 16, device="cuda")
    # The adversarial suite's own candidates, called in this process (the scores below run them
    # through sandboxed workers).
    adv = REPO / "tests" / "adversarial" / "candidates"
    honest, side_stream, syncs = (runpy.run_path(str(adv / f))["kernel"] for f in
                                  ("gpu_current_stream.py", "side_stream_after_wait.py", "synchronizes.py"))

    def profiles():
        res = {}
        for name, fn in (("honest_current_stream", honest), ("side_stream", side_stream)):
            t = watched()
            acts = profile_timed_call(t, fn, (x, y), None)
            res[name] = {"findings": outside_window(acts), "activities": [a.__dict__ for a in acts][:20]}
        return res
    step("side_stream_profile", profiles, lambda v: f"honest {v['honest_current_stream']['findings']}, side "
         f"{(v['side_stream']['findings'] or ['NONE'])[0][:50]}")

    def host_vs_events():
        res = {}
        for name, fn in (("honest", honest), ("side_stream", side_stream)):
            t = watched()
            t.time_block(fn, [(x, y)] * 3, None)
            b = t.time_block(fn, [(x, y)] * 50, None)
            res[name] = {"events_us": b.total_ns / 50e3, "host_us": b.host_ns / 50e3,
                         "unaccounted_us": (b.host_ns - b.total_ns) / 50e3}
        return res
    step("host_vs_events", host_vs_events, lambda v: f"unaccounted/call: honest {v['honest']['unaccounted_us']:.1f}us, "
         f"side {v['side_stream']['unaccounted_us']:.1f}us")

    def synchronizing():
        t = watched(hold_timeout_s=0.2)
        t0 = time.perf_counter()
        b = t.time_block(syncs, [(x, y)] * 5, None)
        return {"fallback": t.fallback, "mode": b.mode, "block_s": time.perf_counter() - t0,
                "per_call_us": b.total_ns / 5e3, "watchdog": details.get("watchdog_released", 0)}
    step("synchronizing_call", synchronizing, lambda v: f"fallback={v['fallback']} mode={v['mode']} "
         f"block {v['block_s']:.2f}s")

    def flush_effect():
        l2 = int(getattr(props, "L2_cache_size", 0)) or (50 << 20)
        buf = torch.randn(l2 // 2 // 4, device="cuda")
        flush = cuda_l2_flusher("cuda")
        warm = per_call_us(timer, lambda: buf.sum())
        cold = per_call_us(timer, lambda: buf.sum(), flush=flush)
        return {"buffer_mb": l2 / 2 / 1e6, "warm_us": warm, "flushed_us": cold, "ratio": cold / warm}
    step("l2_flush", flush_effect, lambda v: f"read {v['buffer_mb']:.0f} MB: warm {v['warm_us']:.1f}us, "
         f"flushed {v['flushed_us']:.1f}us ({v['ratio']:.2f}x)")

    def host_overhead():
        """Host microseconds per call of each piece of the held-call sequence (not in the events)."""
        gpu = timer._gpu

        def each(fn, n=200):
            torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(n):
                fn()
            torch.cuda.synchronize()
            return (time.perf_counter() - t) / n * 1e6

        def held():
            with gpu.on_stream():
                gpu.hold()
                gpu.release()
            gpu.synchronize()
        return {"reset_persisting_l2": each(gpu.reset_persisting_l2), "synchronize": each(gpu.synchronize),
                "hold_release_sync": each(held), "record": each(gpu.record),
                "whole_empty_call": each(lambda: timer.time_block(lambda: None, [()], None))}
    step("host_overhead_us", host_overhead, lambda v: ", ".join(f"{k} {x:.1f}" for k, x in v.items()))

    step("nvml_describe", lambda: describe("cuda"))
    nvml, bus, why = connect("cuda")

    def dry_run_lock():
        with ClockLock(nvml, bus, ClockRequest("base", dry_run=True), unavailable_reason=why) as lock:
            return lock.control.to_dict()
    step("clock_lock_dry_run", dry_run_lock)

    def monitor_blocks():
        mon = Monitor(nvml, nvml.handle(bus))
        a = torch.randn(2048, 2048, device="cuda")
        seen = []
        for _ in range(3):
            mon.begin()
            for _ in range(10):
                a = torch.tanh(a @ a)
            torch.cuda.synchronize()
            seen.append(mon.end().to_dict())
        return seen
    if nvml is not None:
        step("monitor", monitor_blocks)

    def sandbox_cuda():
        """Can a sandboxed worker reach the GPU (as nobody; as uid 0 without capabilities)?"""
        import dataclasses
        import glob
        import subprocess

        from perfbench.isolation.processes.launch import _worker_env
        from perfbench.isolation.sandbox.plan import plan_sandbox
        snippet = ("import os,ctypes,glob;print('uid',os.getuid());"
                   "print([(p,oct(os.stat(p).st_mode),os.access(p,os.R_OK|os.W_OK)) for p in sorted(glob.glob('/dev/nvidia*'))]);"
                   "c=ctypes.CDLL('libcuda.so.1');print('cuInit',c.cuInit(0));"
                   "import torch;print('count',torch.cuda.device_count())")
        res = {"host_dev": [(p, oct(os.stat(p).st_mode), os.stat(p).st_uid, os.stat(p).st_gid)
                            for p in sorted(glob.glob("/dev/nvidia*"))],
               "ld_library_path": os.environ.get("LD_LIBRARY_PATH")}
        for name, as_root in (("nobody", False), ("uid0_no_caps", True)):
            plan = plan_sandbox("diag", untrusted=True)
            if as_root and plan.view is not None:
                plan = dataclasses.replace(plan, view=dataclasses.replace(plan.view, uid=None, gid=None))
            try:
                p = subprocess.run(plan.wrap([sys.executable, "-c", snippet]), env=plan.env(_worker_env()),
                                   capture_output=True, text=True, timeout=90)
                res[name] = {"rc": p.returncode, "out": p.stdout[-2000:], "err": p.stderr[-2000:],
                             "missing": list(plan.missing)}
            finally:
                plan.remove()
        return res
    step("sandbox_cuda", sandbox_cuda, lambda v: f"nobody rc={v['nobody']['rc']} "
         f"{v['nobody']['out'].splitlines()[-1] if v['nobody']['out'] else v['nobody']['err'][-60:]}; uid0 rc="
         f"{v['uid0_no_caps']['rc']}")

    task = REPO / "tests" / "fixtures" / "tiny_task"
    problem = REPO / "tests" / "fixtures" / "gpumode" / "axpb_py"
    sol_problem = REPO / "tests" / "fixtures" / "sol_execbench" / "own" / "axpy_head"
    # (name, task, candidate, s_ref policy): the live s_ref times the solution as a third worker;
    # the GPU MODE problem makes its inputs with generate_input on the device and is judged by
    # its check_implementation on outputs read back from it.
    cands = [("score_honest", REPO / "tests" / "fixtures" / "candidates" / "honest_fast.py"),
             ("score_side_stream", adv / "side_stream.py"), ("score_synchronizes", adv / "synchronizes.py"),
             ("score_current_stream", adv / "gpu_current_stream.py"),
             ("score_side_after_wait", adv / "side_stream_after_wait.py"),
             ("score_side_unless_prof", adv / "side_stream_unless_profiled.py")]
    cands = [(name, task, cand, "table") for name, cand in cands] + [
        ("score_live_s_ref", task, REPO / "tests" / "fixtures" / "candidates" / "honest_fast.py", "live"),
        ("score_gpumode", problem, problem / "solutions" / "correct" / "fused.py", "auto"),
        ("score_gpumode_wrong", problem, problem / "solutions" / "wrong" / "untouched.py", "auto")] + [
        # #62 on CUDA: a SOL-ExecBench problem's workloads, DPS outputs poisoned on the device, the
        # judge per workload's tolerance, the peaks measured once per level and dtype
        (name, sol_problem, sol_problem / file, "auto") for name, file in (
            ("score_solexec_dps", "solution_dps.json"), ("score_solexec_wrong", "solution_wrong.json"),
            ("score_solexec_untouched", "solution_untouched.json"))]
    for name, where, cand, policy in cands:
        if time.perf_counter() - t_start > DEADLINE_S:
            rows.append((name, "SKIP", "-", "out of time"))
            continue

        def run(where=where, cand=cand, policy=policy):
            r = score(where, cand, ScoreConfig(device="cuda", clocks=ClockRequest("base", dry_run=True), processes=1,
                                               check_seeds=2, s_ref_policy=policy,
                                               sampler=SamplerConfig(min_pairs=6, max_pairs=6, warmup_s=0.05)))
            return {"verdict": r.verdict, "reasons": [f"{x.code}: {x.message}" for x in r.reasons],
                    "speedup": r.speedup.value if r.speedup else None, "live_s_ref": r.live_s_ref,
                    "warnings": list(r.warnings),
                    "timing_mode": r.comparison.extra.get("timing_mode") if r.comparison else None,
                    "sandbox_missing": r.isolation.get("missing") if r.isolation else None,
                    "contract": r.contract,   # the input contract's CHECKs, transformed in the CUDA worker (#58)
                    "candidate_log": r.worker_logs.get("candidate", "")[-1500:]}
        step(name, run, lambda v: (f"{v['verdict']} {v['reasons'][0][:60] if v['reasons'] else ''} s={v['speedup']} "
                                   f"contract={len(v['contract'].get('transforms', []))} "
                                   f"{[w[:40] for w in v['warnings'] if 'candidate.' in w or 'side-stream' in w]}"))

    details["total_s"] = time.perf_counter() - t_start
    save()
    print(f"\n{'check':<24} {'result':<6} {'time':>6}  detail")
    for name, res, t, detail in rows:
        print(f"{name:<24} {res:<6} {t:>6}  {detail}")
    for key in ("linearity_sleep", "linearity_elementwise"):
        v = details.get(key, {})
        if "error" not in v and v:
            print(f"\n{key}: per-call us and error of t(size)/t(500us) against the work ratio")
            print(f"{'size':>6} {'new us':>9} {'new err':>8} {'new-floor':>9} {'old us':>9} {'old err':>8} {'old-floor':>9}")
            for us in SIZES_US:
                n, o = v["new"][us], v["old"][us]
                print(f"{us:>6} {n:>9.2f} {v['err']['new'][us]:>+8.1%} {v['err_floor']['new'][us]:>+9.1%} "
                      f"{o:>9.2f} {v['err']['old'][us]:>+8.1%} {v['err_floor']['old'][us]:>+9.1%}")
    return 0 if all(r[1] == "ok" for r in rows) else 1


def _ratio_errors(res: dict, work: dict) -> dict:
    """Per size: (t_i / t_ref) / (w_i / w_ref) - 1, raw and with each timer's empty-call floor taken off."""
    ref = SIZES_US[-1]
    res["err"], res["err_floor"] = {}, {}
    for name in ("new", "old"):
        t, f = res[name], res["floor"][name]
        res["err"][name] = {us: (t[us] / t[ref]) / (work[us] / work[ref]) - 1 for us in SIZES_US}
        res["err_floor"][name] = {us: ((t[us] - f) / (t[ref] - f)) / (work[us] / work[ref]) - 1 for us in SIZES_US}
    return res


def _linearity_short(v) -> str:
    return (f"2us err new {v['err']['new'][2]:+.1%} old {v['err']['old'][2]:+.1%}; "
            f"10us new {v['err']['new'][10]:+.1%} old {v['err']['old'][10]:+.1%}")


def _short(v) -> str:
    if isinstance(v, dict):
        keys = ("status", "speedup", "verdict", "sm_mhz", "reason", "p", "build_s", "per_call_us", "host_us", "mode")
        return ", ".join(f"{k}={v[k]:.3g}" if isinstance(v[k], float) else f"{k}={v[k]}" for k in keys if k in v)[:90]
    if isinstance(v, list):
        return f"{len(v)} blocks, throttled={sum(1 for b in v if b.get('throttled'))}"
    return str(v)[:90]


if __name__ == "__main__":
    sys.exit(main())
