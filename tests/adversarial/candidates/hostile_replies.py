"""The worker-protocol fuzzer (#39): an honest kernel whose worker then lies to the scorer.

From its load on, one reply, or one call's output-table records, is replaced by something
hostile, drawn from SEED (tests/adversarial/test_protocol_fuzz.py writes one copy per seed):
bytes that are not JSON, JSON that is not an object, a field deleted or given a value of the
wrong type or size, an error of the wrong type, a stray blob, a header past the size limit, an
integer of hundreds of digits, nesting thousands deep, NaN or infinity, blobs flooding past what
the request may return, or output-table records with random kinds, addresses, dtypes, shapes and
strides.  Whatever it
does, the scorer must end with a verdict: scored or rejected, never a traceback or a hang.
"""
import json
import multiprocessing.connection as mpc
import random
import sys

import torch

SEED = 0
KIND = None   # a copy may name its kind; else the seed draws it
_rng = random.Random(SEED)
_JUNK = [None, True, -1, 0, 2 ** 63, -(2 ** 70), 1e308, float("nan"), "x", "", [], {}, [1, 2], {"a": 1}, "\u0000"]
_TARGET = _rng.randrange(1, 30)   # which reply (or which timed call's records), counted from the load's
_KIND = KIND or _rng.choice(["bytes", "not_object", "drop", "retype", "error", "stray_blob", "huge", "table",
                     "big_int", "deep", "non_finite", "blob_flood"])
_real_send = mpc.Connection.send_bytes
_replies = 0
print(f"fuzz: seed {SEED}, {_KIND} at reply {_TARGET}", file=sys.stderr, flush=True)


def _hostile(header: dict) -> list[bytes]:
    if _KIND == "bytes":
        return [bytes(_rng.randrange(256) for _ in range(_rng.randrange(0, 64)))]
    if _KIND == "not_object":
        return [json.dumps(_rng.choice([[1, 2], 3, "reply", None, [header]])).encode()]
    if _KIND == "huge":
        return [json.dumps(dict(header, pad="x" * (2 << 20))).encode()]
    keys = [k for k in header if k != "n_blobs"] or ["id"]
    # #58 (2): what crashed the scorer before replies were parsed within limits
    if _KIND == "big_int":
        text = json.dumps(dict(header, **{_rng.choice(keys): 0}))
        return [text.replace(": 0", ": " + "9" * _rng.choice([25, 400, 4000]), 1).encode()]
    if _KIND == "deep":
        depth = _rng.choice([17, 1000, 100_000])
        return [json.dumps(dict(header, **{_rng.choice(keys): 0})).replace(": 0", ": " + "[" * depth + "]" * depth,
                                                                            1).encode()]
    if _KIND == "non_finite":
        header[_rng.choice(keys)] = _rng.choice([float("nan"), float("inf"), -float("inf")])
        return [json.dumps(header, allow_nan=True).encode()]
    if _KIND == "blob_flood":   # announced and sent beyond what the request may return
        n = _rng.randrange(1, 5)
        header["n_blobs"] = int(header.get("n_blobs", 0)) + n
        return [json.dumps(header).encode()] + [b"\x00" * (_rng.randrange(1, 64) << 20) for _ in range(n)]
    if _KIND == "drop":
        header.pop(_rng.choice(keys), None)
    elif _KIND == "retype":
        header[_rng.choice(keys + ["n_blobs"])] = _rng.choice(_JUNK)
    elif _KIND == "error":
        header["error"] = _rng.choice(_JUNK + ["usage", "worker.error", "candidate.raised"])
        header["message"] = _rng.choice(_JUNK)
    elif _KIND == "stray_blob":
        header["n_blobs"] = int(header.get("n_blobs", 0)) + 1
        return [json.dumps(header).encode(), b"\x00" * _rng.randrange(0, 100)]
    print(f"fuzz: sent {str(header)[:200]}", file=sys.stderr, flush=True)
    return [json.dumps(header, allow_nan=True).encode()]


def _send_bytes(self, buf, offset=0, size=None):
    global _replies
    data = bytes(buf)
    try:
        header = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        header = None
    if not isinstance(header, dict) or "n_blobs" not in header:   # a blob, or not a reply
        return _real_send(self, buf, offset, size)
    _replies += 1
    if _KIND == "table" or _replies != _TARGET:
        return _real_send(self, buf, offset, size)
    for part in _hostile(header):
        _real_send(self, part)
    return None


mpc.Connection.send_bytes = _send_bytes

_calls = 0


def _scribble(table) -> None:
    """Random output-table records over the rows a timed block just described."""
    values = [-(2 ** 63), -1, 0, 1, 2, 3, 5, 8, 9, 12, 4096, 2 ** 31, 2 ** 62, 2 ** 63 - 1]
    rows = _rng.randrange(1, 4)
    for r in range(min(rows, table.shape[0])):
        for c in range(table.shape[1]):
            table[r, c] = _rng.choice(values) if _rng.random() < 0.7 else _rng.randrange(-(2 ** 63), 2 ** 63)
        table[r, 0] = _rng.randrange(-1, 8)
    print(f"fuzz: table rows {table[:rows].tolist()}", file=sys.stderr, flush=True)


def kernel(x, y):
    global _calls
    _calls += 1
    if _KIND == "table" and _calls > 20:   # timed calls (the gate makes 12, its contract 8): after this block's
        import gc                          # records are written, scribble over them
        for obj in gc.get_objects():
            if type(obj).__name__ == "ArenaRequests" and getattr(obj, "table", None) is not None:
                real = type(obj)._describe_outputs

                def describe(state, outputs, _real=real):
                    _real(state, outputs)
                    global _TARGET
                    _TARGET -= 1
                    if _TARGET == 0:
                        _scribble(state.table)

                type(obj)._describe_outputs = describe
                break
        _calls = -(10 ** 9)   # patched once
    return torch.add(y, x, alpha=2)
