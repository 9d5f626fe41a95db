"""The terminal table at the end of a pytest run: one row per benchmark."""
from __future__ import annotations

from .records import BenchRecord


def _time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds / 1e-9:.1f} ns"


def summary_lines(records: list[BenchRecord]) -> list[str]:
    rows = [("benchmark", "median", "against", "speedup", "95% CI", "verdict")]
    for r in records:
        j = r.judgement
        against = f"{r.reference} ({'paired' if j.paired else 'unpaired'})" if j is not None else "-"
        if j is None:
            rows.append((r.name, _time(r.median_s), against, "-", "-", r.note or "timed"))
            continue
        verdict = (f"REGRESSION ({j.slowdown:.1%} slower)" if j.regression
                   else "slower, within threshold" if j.speedup < 1 and j.significant
                   else "faster" if j.significant else "no significant change")
        rows.append((r.name, _time(r.median_s), against, f"{j.speedup:.3f}x", f"[{j.ci[0]:.3f}, {j.ci[1]:.3f}]", verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
