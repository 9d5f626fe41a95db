"""`--perfbench-histogram`: one panel per benchmark, the distribution of its per-iteration times
beside what it was compared with (the baseline, REV's version, or the saved run), medians
marked, the verdict in the title.  matplotlib's object API (no pyplot state), Agg backend."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .records import PAIRED, BenchRecord
from .store import SavedRun

_COLS = 3


def _reference_ns(record: BenchRecord, saved: SavedRun | None) -> tuple[float, ...]:
    if record.baseline_ns:
        return record.baseline_ns
    if saved is not None and record.judgement is not None:
        return tuple(saved.samples_ns.get(record.fullname, ()))
    return ()


def write_histogram(records: list[BenchRecord], path: Path, *, saved: SavedRun | None = None) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = -(-len(records) // _COLS)
    cols = min(_COLS, len(records))
    fig = Figure(figsize=(4.2 * cols, 3.0 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    for i, r in enumerate(records):
        ax = fig.add_subplot(rows, cols, i + 1)
        ref = np.asarray(_reference_ns(r, saved), float) / 1e3
        cur = np.asarray(r.samples_ns, float) / 1e3
        both = np.concatenate([cur, ref]) if ref.size else cur
        bins = np.linspace(both.min(), both.max(), 25) if both.max() > both.min() else 10
        if ref.size:
            ax.hist(ref, bins=bins, alpha=0.5, color="tab:gray", label=r.reference or "reference")
            ax.axvline(float(np.median(ref)), color="tab:gray", ls="--")
        ax.hist(cur, bins=bins, alpha=0.6, color="tab:blue", label="candidate" if r.kind == PAIRED else "this run")
        ax.axvline(float(np.median(cur)), color="tab:blue", ls="--")
        j = r.judgement
        verdict = (f"{j.speedup:.3f}x [{j.ci[0]:.3f}, {j.ci[1]:.3f}]" + (" REGRESSION" if j.regression else "")
                   if j is not None else r.note or "timed")
        ax.set_title(f"{r.name}\n{verdict}", fontsize=8, color="tab:red" if j is not None and j.regression else "black")
        ax.set_xlabel("time per call (us)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    return path
