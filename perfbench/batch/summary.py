"""What a batch produced, in a few numbers: outcomes, the gate, mean R_perf, KernelBench's
fast_p, failures by reason, and whether rows of one task were scored on different hardware."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .records import BatchRecord

FAST_P = (0.0, 1.0, 1.5, 2.0)


@dataclass(frozen=True)
class BatchSummary:
    records: tuple[BatchRecord, ...]
    wall_s: float | None = None    # of this invocation (resumed rows excluded)
    ran: int = 0                   # rows this invocation scored

    @property
    def outcomes(self) -> Counter:
        return Counter(r.outcome for r in self.records)

    @property
    def passed_gate(self) -> float:
        return self.outcomes["scored"] / len(self.records) if self.records else 0.0

    @property
    def mean_r_perf(self) -> float | None:
        """Over scored and rejected rows (a rejection earns 0); rows without an s_ref are left out."""
        rs = [r.r_perf for r in self.records if r.outcome != "error" and r.r_perf is not None]
        return sum(rs) / len(rs) if rs else None

    def fast_p(self, p: float) -> float:
        """KernelBench's fast_p: the share of all rows that are correct and faster than p x."""
        ok = [r for r in self.records if r.outcome == "scored" and r.speedup is not None and r.speedup > p]
        return len(ok) / len(self.records) if self.records else 0.0

    @property
    def failures(self) -> Counter:
        c: Counter = Counter()
        for r in self.records:
            if r.outcome == "rejected":
                c.update(r.reasons[:1] or ["rejected"])
            elif r.outcome == "error":
                c[f"error.{r.error_kind}"] += 1
        return c

    @property
    def mixed_hardware(self) -> dict[str, list[str]]:
        """Tasks whose rows took s_ref from more than one hardware class."""
        keys: dict[str, set[str]] = {}
        for r in self.records:
            if r.device_key:
                keys.setdefault(r.task, set()).add(r.device_key)
        return {t: sorted(k) for t, k in keys.items() if len(k) > 1}

    def to_dict(self) -> dict:
        return {"rows": len(self.records), "outcomes": dict(self.outcomes), "passed_gate": self.passed_gate,
                "mean_r_perf": self.mean_r_perf, "fast_p": {str(p): self.fast_p(p) for p in FAST_P},
                "failures": dict(self.failures), "mixed_hardware": self.mixed_hardware,
                "wall_s": self.wall_s, "ran": self.ran,
                "rows_per_minute": 60 * self.ran / self.wall_s if self.wall_s and self.ran else None}

    def table(self) -> str:
        o = self.outcomes
        lines = [f"{'rows':<12} {len(self.records)}: {o['scored']} scored, {o['rejected']} rejected, {o['error']} errors",
                 f"{'passed gate':<12} {100 * self.passed_gate:.1f}%",
                 f"{'mean R_perf':<12} " + ("n/a (no s_ref)" if self.mean_r_perf is None else f"{self.mean_r_perf:.3f}"),
                 f"{'fast_p':<12} " + "  ".join(f"p={p:g}: {100 * self.fast_p(p):.1f}%" for p in FAST_P)]
        for code, n in self.failures.most_common():
            lines.append(f"{'failed':<12} {n:>4}  {code}")
        for task, keys in self.mixed_hardware.items():
            lines.append(f"{'WARNING':<12} {task} was scored on {len(keys)} hardware classes ({', '.join(keys)}): "
                         "its R_perf values come from different s_ref tables")
        if self.wall_s and self.ran:
            lines.append(f"{'throughput':<12} {self.ran} rows in {self.wall_s:.0f} s: {60 * self.ran / self.wall_s:.1f} rows/minute")
        return "\n".join(lines)
