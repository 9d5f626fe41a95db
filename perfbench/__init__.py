"""perfbench: trustworthy kernel speedups."""
from .core.errors import CandidateRejected, PerfbenchError, UsageError
from .core.results import SCHEMA_VERSION, ComparisonResult, PairedSamples
from .core.scoring import r_impl, r_perf
from .core.version import __version__
from .timing.sampler import SamplerConfig

__all__ = ["compare", "r_perf", "r_impl", "SamplerConfig", "ComparisonResult", "PairedSamples",
           "SCHEMA_VERSION", "PerfbenchError", "UsageError", "CandidateRejected", "__version__"]


def __getattr__(name: str):
    # `compare` imports torch (~1 s), so it is imported on first use, not with the package: every
    # perfbench process imports this package first, and `perfbench score` must be able to start
    # its zygotes (which import torch themselves) before it imports torch (pipeline/score.py).
    if name == "compare":
        from .pipeline.compare import compare

        globals()["compare"] = compare
        return compare
    raise AttributeError(f"module 'perfbench' has no attribute {name!r}")
