"""Every secret a score draws, in one place: keyed hashes of labelled uses (#58).

A score has two independent 62-bit secrets:
- `timing`, the key of everything the candidate must not know in advance: the gate's check
  inputs, each timed block's inputs (and so each iteration's), the in-page offset of a block's
  arguments, the draws of the side order and of each timed process.  It is the verdict's `seed`.
- `worker`, the key of the values handed to the workers at LOAD (the weight-init seed, the
  probe's inputs).  Drawn on its own, so a worker holds nothing derived from `timing`.

Each value is `blake2b(label, key=secret)`: a keyed pseudo-random function, so one output (a
block seed the worker sees in a CUDA PREPARE) tells nothing of any other, nor of the key.  The
mixer it replaces (numpy's SeedSequence, and linear formulas) is invertible: a candidate ran it
backwards from the two LOAD seeds to the master, and so to every timed input.
"""
from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

SEED_BITS = 62
_MASK = (1 << SEED_BITS) - 1


def keyed_seed(key: int, label: str, *index: int) -> int:
    """The 62-bit value of `label` (and its indices) under `key`."""
    if not 0 <= key <= (1 << 64) - 1:
        raise ValueError(f"a key is an unsigned 64-bit integer, not {key}")
    message = "/".join([label, *map(str, index)]).encode()
    digest = hashlib.blake2b(message, key=key.to_bytes(8, "little"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & _MASK


def block_seed(key: int, pair: int) -> int:
    """The seed of pair `pair`'s inputs (both sides of a pair see the same; -1: the warm-up)."""
    return keyed_seed(key, "block", pair)


def iteration_seed(block: int, k: int) -> int:
    """Iteration k of a block: fresh inputs per call, known only with the block's seed (which a
    CUDA worker is given in PREPARE to make that block's inputs, and nothing after it)."""
    return keyed_seed(block, "iteration", k)


def in_page_draw(block: int, n: int) -> int:
    """A block's in-page offset index, below n (wire/arena.in_page_start says why)."""
    return keyed_seed(block, "in-page") % n


@dataclass(frozen=True)
class ScoreKey:
    """The two secrets of one score (module docstring)."""
    timing: int
    worker: int

    def __post_init__(self) -> None:
        for name in ("timing", "worker"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 0 <= value <= _MASK:
                raise ValueError(f"ScoreKey.{name} must be an integer in [0, 2**{SEED_BITS}), not {value!r}")

    @classmethod
    def fresh(cls) -> "ScoreKey":
        return cls(secrets.randbits(SEED_BITS), secrets.randbits(SEED_BITS))

    @classmethod
    def from_seed(cls, seed: int) -> "ScoreKey":
        """A reproducible score (`--seed`): the worker's key is still a keyed value, of the
        seed's own label, so no worker value equals or inverts to one of `timing`'s."""
        seed &= _MASK
        return cls(seed, keyed_seed(seed, "worker-key"))

    def check_seeds(self, n: int) -> list[int]:
        """The gate's inputs: n draws, never handed to a worker (the scorer writes the inputs)."""
        return [keyed_seed(self.timing, "check", i) for i in range(n)]

    def contract_seed(self) -> int:
        """The inputs the gate transforms by the task's input contract (task/contract.py)."""
        return keyed_seed(self.timing, "contract")

    def contract_blocks_seed(self, j: int) -> int:
        """Timed process j's contract blocks (sides/contract_blocks.py): when each runs, its
        transform, its inputs and the iteration checked."""
        return keyed_seed(self.timing, "contract-blocks", j)

    def process_seed(self, j: int) -> int:
        """Timed process j's run key: its side order and its blocks' seeds."""
        return self.timing if j == 0 else keyed_seed(self.timing, "process", j)

    def baseline_alone_seed(self) -> int:
        return keyed_seed(self.timing, "baseline-alone")

    @property
    def init_seed(self) -> int:
        """The weight-init seed every side (and the scorer's reference) builds its module with."""
        return keyed_seed(self.worker, "init")

    @property
    def probe_seed(self) -> int:
        """The probe's inputs (LOAD: the output signature, the arena's size)."""
        return keyed_seed(self.worker, "probe")
