"""The orchestrators: the only code that ties timing, isolation, correctness and scoring together."""
from .compare import check_device, compare

__all__ = ["compare", "check_device"]
