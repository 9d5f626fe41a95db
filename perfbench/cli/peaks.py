"""`perfbench peaks`: this machine's memory bandwidth and GEMM FLOP/s, measured (device/peaks.py)."""
from __future__ import annotations

import json

import click


def _si(value: float, unit: str) -> str:
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= scale:
            return f"{value / scale:.1f} {prefix}{unit}"
    return f"{value:.0f} {unit}"


def _size(n: int) -> str:
    for scale, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if n >= scale:
            return f"{n / scale:g} {suffix}"
    return f"{n} B"


def format_peaks(report) -> str:
    caches = ", ".join(f"{k} {_size(v)}" for k, v in report.caches.items()) or "unknown"
    lines = [f"device     {report.device}, {report.threads} thread(s); caches: {caches}"]
    if report.datasheet:
        lines.append("datasheet  " + ", ".join(f"{k} {v}" for k, v in report.datasheet.items()))
    lines.append(f"{'working set':>12}  " + "  ".join(f"{k:>22}" for k in ("read", "copy", "triad")))
    for ws in sorted({r.working_set_bytes for r in report.bandwidth}):
        row = {r.kind: r for r in report.bandwidth if r.working_set_bytes == ws}
        lines.append(f"{_size(ws):>12}  " + "  ".join(
            f"{_si(row[k].value, 'B/s'):>10} [{_si(row[k].low, ''):>4}-{_si(row[k].high, ''):>4}]".rjust(22)
            for k in ("read", "copy", "triad")))
    for r in report.gemm:
        lines.append(f"{'GEMM ' + r.dtype:>12}  {_si(r.value, 'FLOP/s')} [{_si(r.low, '')} - {_si(r.high, '')}]")
    lines.append(f"took {report.seconds:.1f} s; no clock was changed")
    return "\n".join(lines)


@click.command()
@click.option("--device", default="cpu", show_default=True, help="cpu or cuda[:N].")
@click.option("--threads", type=int, default=1, show_default=True,
              help="torch threads while measuring: the thread count the tasks use.")
@click.option("--quick", is_flag=True, help="Fewer working sets and repeats (seconds; for a first look).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def peaks(device, threads, quick, as_json):
    """Measure this machine's memory bandwidth (read, copy, triad; every cache level and memory)
    and GEMM FLOP/s per dtype, each with its spread.  Changes no clock."""
    from ..core.errors import UsageError
    from ..device.check import check_device
    from ..device.peaks import measure_peaks

    if threads < 1:
        raise UsageError(f"--threads {threads}: at least 1")
    report = measure_peaks(check_device(device), threads, quick=quick,
                           say=None if as_json else (lambda msg: click.echo(msg, err=True)))
    click.echo(json.dumps(report.to_dict(), indent=2) if as_json else format_peaks(report))
