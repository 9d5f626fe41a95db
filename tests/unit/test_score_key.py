"""core/score_key.py: every secret of a score is a keyed hash of a labelled use (#58 (1))."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from perfbench.core.score_key import SEED_BITS, ScoreKey, block_seed, in_page_draw, iteration_seed, keyed_seed


def test_a_keyed_seed_is_blake2b_of_its_label_under_the_key():
    digest = hashlib.blake2b(b"block/3", key=(12345).to_bytes(8, "little"), digest_size=8).digest()
    assert block_seed(12345, 3) == int.from_bytes(digest, "little") & ((1 << 62) - 1)
    assert keyed_seed(12345, "block", 3) == block_seed(12345, 3)


def test_every_label_index_and_key_gives_its_own_62_bit_value():
    values = {keyed_seed(key, label, *index) for key in (0, 1, 2**62 - 1)
              for label in ("check", "block", "iteration") for index in ((), (0,), (1,), (-1,), (0, 1))}
    assert len(values) == 3 * 3 * 5
    assert all(0 <= v < 1 << SEED_BITS for v in values)
    # about half the top bit set: the values fill their range, not a corner of it
    draws = [block_seed(7, k) for k in range(2000)]
    assert 0.45 < sum(v >> (SEED_BITS - 1) for v in draws) / len(draws) < 0.55


def test_a_key_out_of_range_is_refused():
    with pytest.raises(ValueError, match="unsigned 64-bit"):
        keyed_seed(-1, "block")
    with pytest.raises(ValueError, match="ScoreKey.worker"):
        ScoreKey(1, 1 << 62)
    with pytest.raises(ValueError, match="ScoreKey.timing"):
        ScoreKey(-3, 0)


def test_fresh_keys_are_independent_draws():
    keys = [ScoreKey.fresh() for _ in range(50)]
    assert len({k.timing for k in keys} | {k.worker for k in keys}) == 100


def test_a_fixed_seed_is_the_timing_key_and_reproduces_every_value():
    a, b = ScoreKey.from_seed(11), ScoreKey.from_seed(11)
    assert a == b and a.timing == 11 and a.worker not in (11, 0)
    assert a.check_seeds(4) == b.check_seeds(4) and len(set(a.check_seeds(4))) == 4
    assert ScoreKey.from_seed(-1).timing == (1 << 62) - 1   # masked into range, as recorded


def test_what_a_worker_is_handed_comes_from_the_worker_key_alone():
    a, b = ScoreKey(5, 9), ScoreKey(6, 9)
    assert (a.init_seed, a.probe_seed) == (b.init_seed, b.probe_seed)
    assert a.init_seed != a.probe_seed
    assert a.check_seeds(3) != b.check_seeds(3) and a.baseline_alone_seed() != b.baseline_alone_seed()


def test_process_zero_runs_on_the_timing_key_and_the_others_on_their_own():
    key = ScoreKey(77, 1)
    seeds = [key.process_seed(j) for j in range(5)]
    assert seeds[0] == 77 and len(set(seeds)) == 5


def test_the_seed_sequence_inversion_no_longer_reaches_the_master():
    """The attack of #58: numpy's SeedSequence is invertible, so the two LOAD seeds it derived
    gave the master back.  Now the master cannot even be checked against them: they are keyed
    values of an independent key."""
    key = ScoreKey(timing=123456789, worker=987654321)
    old = np.random.SeedSequence(key.timing).generate_state(2, dtype=np.uint64) >> np.uint64(2)
    assert {key.init_seed, key.probe_seed}.isdisjoint(int(v) for v in old)


def test_iterations_and_in_page_offsets_follow_the_block_seed():
    block = block_seed(3, 0)
    its = [iteration_seed(block, k) for k in range(100)]
    assert len(set(its)) == 100 and its == [iteration_seed(block, k) for k in range(100)]
    offsets = [in_page_draw(block_seed(3, k), 64) for k in range(2000)]
    assert set(offsets) == set(range(64))
