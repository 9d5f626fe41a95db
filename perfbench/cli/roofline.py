"""`perfbench score --plot FILE.png`: the verdict's speed of light as a roofline (#61).

With counted flops: arithmetic intensity (flops per compulsory byte) against achieved FLOP/s, on
log axes, under the measured roofs (the bandwidth's slope and the GEMM's flat top). Without
flops (the bound is memory-only) there is no intensity to place a point at: each side's
achieved bytes/s against the bandwidth's roof. Either way the baseline, the candidate and the
solution (live s_ref) are points with their CI bars.  matplotlib's object API, Agg backend."""
from __future__ import annotations

from pathlib import Path

SIDES = (("baseline", "tab:gray", "o"), ("candidate", "tab:blue", "s"), ("solution", "tab:green", "^"))


def _achieved(sol: dict, side: dict, per_t_sol: float) -> tuple[float, float, float]:
    """A side's achieved rate and its CI: rate = fraction of SOL x the work per t_sol."""
    lo, hi = side["fraction_ci"]
    return side["fraction_of_sol"] * per_t_sol, lo * per_t_sol, hi * per_t_sol


def write_roofline(sol: dict, path: Path, title: str) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    work, peaks = sol["work"], sol["peaks"]
    t_sol_s = sol["t_sol_ns"] * 1e-9
    bw = peaks["bandwidth_bytes_s"]
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    sides = [(name, sol[name], colour, marker) for name, colour, marker in SIDES if sol.get(name)]
    if work.get("flops"):
        intensity = work["flops"] / work["bytes"]
        flop_s = peaks.get("flop_s") or float("inf")
        ridge = flop_s / bw if flop_s != float("inf") else intensity
        lo, hi = min(intensity, ridge) / 16, max(intensity, ridge) * 16   # the call and the roofs' ridge
        xs = [lo * (hi / lo) ** (k / 64) for k in range(65)]
        ax.plot(xs, [min(bw * x, flop_s) for x in xs], color="black", lw=1.5,
                label=f"roof: {bw / 1e9:.1f} GB/s, {flop_s / 1e9:.1f} GFLOP/s")
        for name, side, colour, marker in sides:
            y, lo, hi = _achieved(sol, side, work["flops"] / t_sol_s)
            ax.errorbar([intensity], [y], yerr=[[y - lo], [hi - y]], fmt=marker, color=colour, capsize=4,
                        label=f"{name}: {100 * side['fraction_of_sol']:.1f}% of SOL")
        ax.set_xscale("log")
        ax.set_xlabel("arithmetic intensity (flops per compulsory byte)")
        ax.set_ylabel("achieved FLOP/s")
    else:
        ax.axhline(bw, color="black", lw=1.5, label=f"roof: {bw / 1e9:.1f} GB/s {peaks.get('bandwidth_kind', '')} "
                                                     f"at {peaks.get('working_set_bytes', 0) >> 10} KiB")
        for i, (name, side, colour, marker) in enumerate(sides):
            y, lo, hi = _achieved(sol, side, work["bytes"] / t_sol_s)
            ax.errorbar([i], [y], yerr=[[y - lo], [hi - y]], fmt=marker, color=colour, capsize=4,
                        label=f"{name}: {100 * side['fraction_of_sol']:.1f}% of SOL")
        ax.set_xticks(range(len(sides)), [name for name, *_ in sides])
        ax.set_xlim(-0.5, len(sides) - 0.5)
        ax.set_ylabel("achieved bytes/s (compulsory traffic)")
    ax.set_yscale("log")
    ax.set_title(f"{title}: t_sol {sol['t_sol_ns'] / 1e3:.1f} us ({sol['bound']}-bound), headroom "
                 f"{sol['headroom']:.1f}x", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.savefig(path, dpi=110)
    return path
