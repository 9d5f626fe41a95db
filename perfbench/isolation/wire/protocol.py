"""Wire format between the scorer and a worker: a JSON header, then raw byte blobs.

Never pickle: a worker runs hostile code, and unpickling its bytes in the scorer would hand it
the scorer.  Tensors cross as (metadata, raw bytes) and are rebuilt in the scorer, so no object
the candidate created (a lazy subclass, a shared-memory view it could still write) ever reaches
the comparison.
"""
from __future__ import annotations

import json
import math
from enum import Enum
from typing import Any

import torch

from ...task.correctness import OutputRecord, record_of

MAX_HEADER_BYTES = 1 << 20
_DTYPES = {str(d).replace("torch.", ""): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
    torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


class Op(str, Enum):
    """The requests a scorer sends a worker: one name for both ends (processes/worker_client.py sends them,
    worker.py's `handlers` answers each).  A str, so it is its own JSON."""

    PING = "ping"
    PROBE = "probe"           # the sandbox as the worker sees it, before any task code loads
    MAP = "map"               # CPU: map the input arena and output table
    LOAD = "load"             # load one side's code
    CHECK = "check"           # a gate call, its outputs encoded by the worker (CUDA)
    GATE_CALL = "gate_call"   # a gate call on the arena, outputs read by the scorer (CPU)
    STAGE = "stage"           # CPU: the next block's views; the previous block's tripwires
    RUN = "run"               # CPU: the timed block
    PREPARE = "prepare"       # CUDA: make a block's inputs
    TIME = "time"             # CUDA: the timed block
    FETCH = "fetch"           # CUDA: one timed call's outputs, encoded, with its digests
    SET_MODE = "set_mode"     # CUDA: events or graphs
    PROFILE = "profile"       # CUDA: one call under the profiler (side streams)
    EXIT = "exit"

    def __str__(self) -> str:   # 'run', as messages name it, not 'Op.RUN'
        return self.value

    __format__ = str.__format__


class ProtocolError(Exception):
    """The worker sent something that is not a well-formed reply."""


def send(conn: Any, header: dict[str, Any], blobs: list[bytes] = ()) -> None:
    header = dict(header, n_blobs=len(blobs))
    conn.send_bytes(json.dumps(header).encode())
    for b in blobs:
        conn.send_bytes(b)


# What a reply may hold (#58): a worker's reply is parsed by the scorer, so it must not be able to
# crash it (a RecursionError in json, an OverflowError on a 400-digit integer) or make it
# allocate what the request could never legitimately return.
MAX_DEPTH = 16        # nesting of the reply's objects and lists (the deepest real reply: 5)
MAX_BLOBS = 100_000
_INT_RANGE = (-(1 << 63), 1 << 64)   # int64 and uint64 (addresses, digests)


def _constant(name: str) -> Any:
    raise ProtocolError(f"{name} in the reply")


def _check_values(header: dict) -> None:
    """Every value of a parsed reply within the limits, in one walk without recursion: nesting
    at most MAX_DEPTH, integers within int64/uint64, floats finite (json reads 1e999 as inf).
    One pass over the parsed header rather than a hook per number: this runs inside every timed
    request (on both sides and in the null blocks alike), so it is kept to the one walk
    (benchmarks/results/trust.md, "The reply checks inside a timed request")."""
    stack = [(header, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ProtocolError(f"reply header nested deeper than {MAX_DEPTH}")
        for x in (v.values() if type(v) is dict else v):
            kind = type(x)
            if kind is dict or kind is list:
                stack.append((x, depth + 1))
            elif kind is int:
                if not _INT_RANGE[0] <= x < _INT_RANGE[1]:
                    raise ProtocolError(f"integer {str(x)[:40]} out of range in the reply")
            elif kind is float and not math.isfinite(x):
                raise ProtocolError(f"number {x} out of range in the reply")


def parse_header(data: bytes) -> dict[str, Any]:
    """A reply's header, within the limits above, or ProtocolError.  (An integer of more than
    4300 digits is refused by Python's own conversion limit before it is built.)"""
    try:
        header = json.loads(data, parse_constant=_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"malformed reply header: {exc}") from None
    except RecursionError:
        raise ProtocolError("reply header nested too deeply to parse") from None
    if not isinstance(header, dict):
        raise ProtocolError("reply header is not an object")
    _check_values(header)
    return header


def recv(conn: Any, max_blob_bytes: int) -> tuple[dict[str, Any], list[bytes]]:
    """One reply: its header and its blobs, which together hold at most `max_blob_bytes` (what
    the request can legitimately return; 0 for a request answered by the header alone).  A blob
    past that is refused by its announced length, before it is read."""
    header = parse_header(conn.recv_bytes(MAX_HEADER_BYTES))
    n = header.get("n_blobs", 0)
    if type(n) is not int or not 0 <= n <= MAX_BLOBS:
        raise ProtocolError(f"bad blob count {n!r}")
    blobs, left = [], max_blob_bytes
    for i in range(n):
        try:
            blob = conn.recv_bytes(left)
        except OSError as exc:
            if str(exc) != "bad message length":   # (the channel itself failed: the caller's to judge)
                raise
            raise ProtocolError(f"blob {i} of {n} is past the {max_blob_bytes} bytes this request may "
                                "return") from None
        left -= len(blob)
        blobs.append(blob)
    return header, blobs


def encode_record(rec: OutputRecord) -> tuple[dict[str, Any], bytes]:
    meta = {"type": rec.type_name, "dtype": rec.dtype, "shape": list(rec.shape),
            "strides": list(rec.strides), "device": rec.device, "aliases_input": rec.aliases_input,
            "has_data": rec.tensor is not None}
    if rec.tensor is None:
        return meta, b""
    t = rec.tensor.contiguous()
    return meta, t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


def encode_values(values: list[Any], inputs: tuple = ()) -> tuple[list[dict[str, Any]], list[bytes]]:
    metas, blobs = [], []
    for v in values:
        m, b = encode_record(record_of(v, inputs))
        metas.append(m)
        blobs.append(b)
    return metas, blobs


def decode_record(meta: dict[str, Any], blob: bytes) -> OutputRecord:
    try:
        type_name = str(meta["type"])
        shape = tuple(int(x) for x in meta["shape"])
        strides = tuple(int(x) for x in meta["strides"])
        device = str(meta["device"])
        aliases = bool(meta["aliases_input"])
        if type_name != "Tensor":
            return OutputRecord(type_name, "", (), (), "", False, None)
        dtype = _DTYPES[meta["dtype"]]
        if not meta["has_data"]:
            return OutputRecord(type_name, meta["dtype"], shape, strides, device, aliases, None)
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed tensor record: {exc!r}") from None
    if any(s < 0 for s in shape):
        raise ProtocolError(f"negative dimension in {shape}")
    itemsize = torch.empty((), dtype=dtype).element_size()
    if len(blob) != math.prod(shape) * itemsize:
        raise ProtocolError(f"tensor of shape {list(shape)} {meta['dtype']} sent {len(blob)} bytes")
    data = torch.frombuffer(bytearray(blob), dtype=torch.uint8) if blob else torch.empty(0, dtype=torch.uint8)
    tensor = data.view(dtype).reshape(shape)
    return OutputRecord(type_name, meta["dtype"], shape, strides, device, aliases, tensor)


def decode_values(metas: Any, blobs: list[bytes]) -> list[OutputRecord]:
    if not isinstance(metas, list) or len(metas) > len(blobs):
        raise ProtocolError("record list does not match the blobs sent")
    return [decode_record(m, b) for m, b in zip(metas, blobs)]
