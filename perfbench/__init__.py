"""perfbench: trustworthy kernel speedups."""
__version__ = "0.1.0"

from .errors import CandidateRejected, PerfbenchError, UsageError  # noqa: E402
from .pipeline import compare  # noqa: E402
from .results import SCHEMA_VERSION, ComparisonResult, PairedSamples  # noqa: E402
from .scoring import r_impl, r_perf  # noqa: E402
from .timing.sampler import SamplerConfig  # noqa: E402

__all__ = ["compare", "r_perf", "r_impl", "SamplerConfig", "ComparisonResult", "PairedSamples",
           "SCHEMA_VERSION", "PerfbenchError", "UsageError", "CandidateRejected", "__version__"]
