"""`perfbench scorch compare`: Scorch's compiled sparse kernels against PyTorch (docs/scorch.md).
Parsing and printing only; the work is in perfbench.sparse."""
from __future__ import annotations

import math
import os
from pathlib import Path

import click

from ..core.errors import UsageError


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _ops(value: str) -> list[str]:
    """--ops: a comma list in which `einsum:EXPR` keeps the commas of its expression
    ("spmv,einsum:ij,jk->ik,spmm" is spmv, einsum:ij,jk->ik and spmm)."""
    ops: list[str] = []
    for part in _csv(value):
        if ops and ops[-1].startswith("einsum:") and "->" not in ops[-1]:
            ops[-1] += "," + part
        else:
            ops.append(part)
    return ops


def _shape(value: str) -> tuple[int, int, int]:
    try:
        dims = tuple(int(v) for v in value.lower().replace("x", ",").split(","))
    except ValueError:
        dims = ()
    if len(dims) == 2:
        dims = (*dims, 64)
    if len(dims) != 3:
        raise UsageError(f"--shape {value!r}: expected M,K[,N], e.g. 2048,2048,64")
    return dims   # type: ignore[return-value]


# Each checkout's compiled kernels, kept between runs (a kernel compiles in 30-60 s).
SCORCH_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "perfbench" / "scorch-extensions"


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f} ms"


def result_lines(results) -> list[str]:
    """One table per case, then the geometric mean of each variant's speedups."""
    from ..sparse.compare import OK
    lines, speedups = [], {}
    for r in results:
        lines.append(f"{r.case.label}  (baseline {r.baseline})")
        rows = [("variant", "compile", "median", "speedup", "95% CI", "p", "status")]
        for v in r.variants:
            timed = v.status == OK and v.speedup is not None and v.variant != r.baseline
            if timed:
                speedups.setdefault(v.variant, []).append(v.speedup)
            rows.append((v.variant, "-" if v.compile_s is None else f"{v.compile_s:.2f} s", _ms(v.median_ns),
                         f"{v.speedup:.2f}x" if v.speedup is not None else "-",
                         f"[{v.ci[0]:.2f}, {v.ci[1]:.2f}]" if timed else "-",
                         f"{v.p_value:.1g}" if timed else "-",
                         v.status if v.status == OK else f"{v.status}: {v.detail}"))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    for variant, s in speedups.items():
        geo = math.exp(sum(math.log(x) for x in s) / len(s))
        lines.append(f"geometric mean speedup of {variant}: {geo:.2f}x over {len(s)} case(s)")
    return lines


def _document(threads: int, results: list) -> dict:
    """scorch compare's JSON (schema 1)."""
    return {"schema": 1, "threads": threads, "results": [r.to_dict() for r in results]}


@click.group()
def scorch() -> None:
    """Scorch's JIT-compiled sparse kernels, timed against PyTorch."""


@scorch.command("compare")
@click.option("--ops", default="spmv,spmm", show_default=True,
              help="Comma list: spmv, spmm, spmspm, sddmm, einsum:EXPR (e.g. einsum:ij,jk->ik; the first operand "
                   "is the sparse one, its indices sized M, K, N in order of appearance).")
@click.option("--formats", default="csr", show_default=True, help="Comma list of sparse-operand formats: dense, csr, coo, dcsr.")
@click.option("--density", "densities", default="0.01", show_default=True, help="Comma list of nonzero fractions.")
@click.option("--shape", "shapes", default=("2048,2048,64",), show_default=True, multiple=True,
              help="M,K[,N] (repeatable).")
@click.option("--pattern", "patterns", default="uniform", show_default=True,
              help="Comma list: uniform, power_law, banded, empty_rows.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the operands and of the timing schedule.")
@click.option("--baseline", default="torch-dense", show_default=True, help="Variant the others are timed against.")
@click.option("--variants", default="torch-sparse,scorch", show_default=True, help="Comma list of variants to time.")
@click.option("--dtype", default="float32", show_default=True, type=click.Choice(["float32", "float64"]))
@click.option("--threads", type=int, default=1, show_default=True, help="torch / OpenMP threads, the same for every variant.")
@click.option("--budget", type=float, default=10.0, show_default=True, help="Seconds of timing per variant and case.")
@click.option("--base-scorch", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Compare two Scorch checkouts: this one is the baseline (each in its own worker processes).")
@click.option("--cand-scorch", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="... and this one the candidate (both needed; --baseline/--variants are then unused).")
@click.option("--processes", type=int, default=3, show_default=True,
              help="Fresh worker pairs a checkout comparison is split between (the CI covers their variation).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout (instead of the table).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Also write the JSON here, rewritten after every case.")
@click.option("--quiet", is_flag=True, help="No progress on stderr.")
def scorch_compare(ops, formats, densities, shapes, patterns, seed, baseline, variants, dtype, threads, budget,
                   base_scorch, cand_scorch, processes, as_json, out, quiet):
    """Gate every variant against dense float64 PyTorch, then time each against the baseline
    (AB-BA pairs).  Compilation happens before timing and is reported on its own."""
    import torch

    from ..sparse.cases import CaseError, SparseCase
    from ..sparse.compare import WorkerSpec, run_case, run_case_workers
    from ..sparse.variants import VARIANTS
    from ..timing.sampler import SamplerConfig
    from .output import write_json

    if threads < 1 or processes < 1:
        raise UsageError(f"--threads {threads} / --processes {processes}: at least 1")
    if (base_scorch is None) != (cand_scorch is None):
        raise UsageError("--base-scorch and --cand-scorch go together (two checkouts to compare)")
    for v in [baseline, *_csv(variants)]:
        kind, _, file = v.partition(":")
        if file and kind in ("py", "scorch") and not Path(file).is_file():
            raise UsageError(f"--variants/--baseline: {v}: no such file")
        if v not in VARIANTS and not (file and kind in ("py", "scorch")):
            raise UsageError(f"--variants/--baseline: unknown variant {v!r} (known: {', '.join(VARIANTS)}, scorch:FILE, py:FILE)")
    if any(v.partition(":")[0] == "scorch" for v in (baseline, *_csv(variants))) or base_scorch is not None:
        from ..adapters.scorch import scorch_module
        scorch_module()   # absent: one line and exit 3, before any case is built
    try:
        cases = [SparseCase(op, fmt, float(d), _shape(shape), pattern, seed, dtype)
                 for op in _ops(ops) for fmt in _csv(formats) for d in _csv(densities)
                 for shape in shapes for pattern in _csv(patterns)]
    except (CaseError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    torch.set_num_threads(threads)
    sampler = SamplerConfig(min_pairs=6, max_pairs=40, warmup_s=0.1, time_budget_s=budget, target_rel_ci=0.02)
    say = (lambda _m: None) if quiet else (lambda m: click.echo(f"perfbench: {m}", err=True))
    results = []
    specs = None
    if base_scorch is not None:   # once, before the cases: each checkout's environment, its scorch_ops built
        from ..adapters.scorch import build_native, checkout_env
        specs = tuple(WorkerSpec(label, "scorch", checkout_env(path, dict(os.environ), SCORCH_CACHE))
                      for label, path in (("base", base_scorch), ("cand", cand_scorch)))
        for checkout in (base_scorch, cand_scorch):
            build_native(checkout.resolve(), say)
    for case in cases:
        if specs is not None:
            results.append(run_case_workers(case, specs, sampler=sampler, seed=seed, threads=threads,
                                            processes=processes, say=say))
        else:
            results.append(run_case(case, _csv(variants), baseline=baseline, sampler=sampler, seed=seed, say=say))
        if out is not None:   # after every case: an interrupted run keeps what it measured
            write_json(_document(threads, results), out, False)
    if as_json:
        write_json(_document(threads, results), None, True)
        return
    for line in result_lines(results):
        click.echo(line)
