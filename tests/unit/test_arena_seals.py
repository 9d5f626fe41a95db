"""The scorer's shared arenas cannot be shrunk or sealed further by whoever holds their fd (the
worker holds both read-write): a truncated arena made the scorer die of SIGBUS (#39)."""
import fcntl
import os

import pytest

from perfbench.isolation.wire.arena import SharedArena


@pytest.fixture
def arena():
    a = SharedArena("test-seals")
    yield a
    a.close()


def test_a_held_arena_refuses_shrinking_and_new_seals(arena):
    arena.resize(3 * 4096)
    worker_fd = os.open(f"/proc/self/fd/{arena.fd}", os.O_RDWR)   # another open file, as the worker's
    try:
        with pytest.raises(PermissionError):
            os.ftruncate(worker_fd, 0)
        with pytest.raises(PermissionError):
            fcntl.fcntl(worker_fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW)
        assert os.fstat(arena.fd).st_size == 3 * 4096
        arena.view()[-1] = 7   # the scorer's mapping is whole
        assert arena.view()[-1] == 7
    finally:
        os.close(worker_fd)


def test_an_arena_grown_by_the_worker_is_still_resized_by_the_scorer(arena):
    arena.resize(4096)
    os.ftruncate(arena.fd, 1 << 20)   # the worker grew it past what the scorer asks next
    arena.resize(8192)                # (a shrink would be refused: it must not try one)
    assert arena.size == 8192 and os.fstat(arena.fd).st_size == 1 << 20
    arena.view()[8191] = 1
    assert arena.view()[8191] == 1
