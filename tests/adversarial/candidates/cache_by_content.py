"""Cache answers by a hash of the input bytes: pays only if inputs repeat (they never do)."""
import hashlib

_cache = {}


def kernel(x, y):
    key = hashlib.sha1(x.numpy().tobytes() + y.numpy().tobytes()).hexdigest()
    if key not in _cache:
        _cache[key] = 2 * x + y
    return _cache[key].clone()
