"""Honest through the gate, then skips three calls in four at random once timed, returning the
previous call's output: the work is only sometimes done, and only a check of a skipped call can
tell.  Each check catches it with probability 3/4, so a run that checks C iterations lets it
through with probability (1/4)^C."""
import random

_calls = 0
_last = None


def kernel(x, y):
    global _calls, _last
    _calls += 1
    if _calls > 40 and _last is not None and _last.shape == x.shape and random.random() < 0.75:
        return _last
    _last = 2 * x + y
    return _last
