"""One sparse case, every variant: prepare (untimed), gate against dense float64 PyTorch, then
time each correct variant against the baseline variant with AB-BA pairs (pipeline.compare:
all variants here are trusted code, in this process).  A variant that is wrong, does not
compile or does not apply is reported with why, and the others still run."""
from __future__ import annotations

import contextlib
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..core import stats
from ..core.results import PairedSamples
from ..pipeline.compare import compare
from ..timing.sampler import SamplerConfig, sample_pairs
from ..timing.served_side import ServedSide, SideUnavailable
from .cases import CompileError, SparseCase, operands, reference
from .variants import COMPILE_ERROR, INCORRECT, NOT_APPLICABLE, OK, NotApplicable, Prepared, gate, prepare

NO_BASELINE = "no_baseline"


@dataclass(frozen=True)
class VariantResult:
    variant: str
    status: str                     # OK or why it was not timed
    detail: str = ""
    compile_s: float | None = None
    median_ns: float | None = None  # per call (the baseline's own row included)
    speedup: float | None = None    # baseline time / this variant's time
    ci: tuple[float, float] | None = None
    p_value: float | None = None


@dataclass(frozen=True)
class CaseResult:
    case: SparseCase
    baseline: str
    variants: tuple[VariantResult, ...]

    def to_dict(self) -> dict:
        return {"case": asdict(self.case), "label": self.case.label, "baseline": self.baseline,
                "variants": [asdict(v) for v in self.variants]}


def run_case(case: SparseCase, variants: list[str], *, baseline: str, sampler: SamplerConfig, seed: int,
             say: Callable[[str], None] = lambda _: None) -> CaseResult:
    ops = operands(case)
    ref = reference(case, ops)
    ready: dict[str, Prepared] = {}
    rows: dict[str, VariantResult] = {}
    for v in dict.fromkeys([baseline, *variants]):
        say(f"{case.label}: preparing {v}")
        try:
            p = prepare(v, case, ops)
        except NotApplicable as exc:
            rows[v] = VariantResult(v, NOT_APPLICABLE, str(exc))
            continue
        except CompileError as exc:
            rows[v] = VariantResult(v, COMPILE_ERROR, str(exc))
            continue
        wrong = gate(p, case, ref)
        rows[v] = VariantResult(v, INCORRECT if wrong else OK, f"{case.label}: {wrong}" if wrong else "", p.compile_s)
        if not wrong:
            ready[v] = p
    if baseline not in ready:
        why = f"the baseline {baseline} is {rows[baseline].status}"
        return CaseResult(case, baseline, tuple(r if r.status != OK else VariantResult(r.variant, NO_BASELINE, why,
                                                                                     r.compile_s) for r in rows.values()))
    base_fn = ready[baseline].fn
    for v, p in ready.items():
        if v == baseline:
            continue
        say(f"{case.label}: timing {v} against {baseline}")
        res = compare(base_fn, p.fn, lambda _seed: (), config=sampler, seed=seed, labels=(baseline, v))
        rows[v] = VariantResult(v, OK, "", p.compile_s, float(np.median(res.samples.candidate_ns)),
                                res.speedup, (res.ci[0], res.ci[1]), res.p_value)
        if rows[baseline].median_ns is None:
            rows[baseline] = VariantResult(baseline, OK, "", ready[baseline].compile_s,
                                           float(np.median(res.samples.baseline_ns)), 1.0)
    return CaseResult(case, baseline, tuple(rows.values()))


@dataclass(frozen=True)
class WorkerSpec:
    """One side of a comparison across processes: a variant, in a worker with this environment
    (a Scorch checkout's: adapters.scorch.checkout_env)."""
    label: str
    variant: str
    env: dict[str, str]


def run_case_workers(case: SparseCase, specs: tuple[WorkerSpec, WorkerSpec], *, sampler: SamplerConfig, seed: int,
                     threads: int, processes: int, say: Callable[[str], None] = lambda _: None) -> CaseResult:
    """Two variants (baseline, candidate) on one case, each in its own worker process
    (sparse/worker.py): `processes` fresh pairs of workers one after the other, their blocks
    AB-BA, the CI covering the variation between the pairs of processes.  Each worker prepares
    and gates its variant first; the first pair prepares both at once (for Scorch: compiles;
    later pairs load the kernels from each checkout's cache)."""
    labels = [spec.label for spec in specs]
    parts: list[PairedSamples] = []
    first: list[dict] = []
    for j in range(processes):
        say(f"{case.label}: worker pair {j + 1} of {processes}" + (" (compiling)" if j == 0 else ""))
        with contextlib.ExitStack() as stack:
            sides = [stack.enter_context(ServedSide(spec.label, lambda fd: [sys.executable, "-m", "perfbench.sparse.worker",
                                                                            str(fd)], cwd=Path.cwd(), env=spec.env))
                     for spec in specs]
            try:
                for side, spec in zip(sides, specs):
                    side.request_start(case=asdict(case), variant=spec.variant, threads=threads)
                started = [side.started() for side in sides]
            except SideUnavailable as exc:
                started = [{"status": "error", "detail": str(exc)}] * 2
            if j == 0:
                first = started
            if any(s.get("status") != OK for s in started):
                break
            parts.append(sample_pairs(sides[0], sides[1], sampler.per_process(processes), seed=seed + j,
                                      iters=parts[0].iters_per_block if parts else None))
    names = [f"{label}@{info['scorch']['commit']}" if info.get("scorch") else label for label, info in zip(labels, first)]
    if len(parts) < processes:
        rows = tuple(VariantResult(n, s.get("status", "error"), s.get("detail", ""), s.get("compile_s"))
                     for n, s in zip(names, first))
        if rows[0].status != OK:
            rows = (rows[0], VariantResult(rows[1].variant, NO_BASELINE, f"the baseline is {rows[0].status}",
                                           rows[1].compile_s))
        return CaseResult(case, names[0], rows)
    samples = PairedSamples.concat(parts)
    summary = stats.summarize(samples.baseline_ns, samples.candidate_ns, seed=seed, processes=samples.processes,
                              baseline_first=samples.baseline_first,
                              confidence=sampler.confidence, n_resamples=sampler.n_resamples)
    sp = summary.speedup
    return CaseResult(case, names[0], (
        VariantResult(names[0], OK, "", first[0].get("compile_s"), float(np.median(samples.baseline_ns)), 1.0),
        VariantResult(names[1], OK, "", first[1].get("compile_s"), float(np.median(samples.candidate_ns)),
                      sp.value, (sp.low, sp.high), summary.p_value)))
