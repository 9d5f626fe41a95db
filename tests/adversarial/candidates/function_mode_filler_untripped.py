"""function_mode_filler with every in-worker tripwire switched off first: only the scorer's own
reading of the frozen worker's memory stands between it and a score."""
import perfbench.isolation.integrity as _integrity

_integrity.Integrity.violations = lambda self: []

from function_mode_filler import kernel  # noqa: E402,F401  (same directory; on sys.path when loaded)
