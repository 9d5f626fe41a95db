"""TaskProgram.make_inputs_many: a block's input sets made on threads where the task's maker keeps
to its own generator (docs/tasks.md), serially where it draws from the global RNG."""
import os
import shutil
import threading
from pathlib import Path

import pytest
import torch

from perfbench.core.errors import UsageError
from perfbench.isolation.wire.arena import in_page_start
from perfbench.task import program as program_module
from perfbench.task.program import TaskProgram
from perfbench.task.spec import load_task

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task"

# A maker that notes the thread of every call (in a module-level list the test reads back).
RECORDING = '''import os, threading, torch
SIZES = {"small": 64, "medium": 4096}
CALLS, CORES = [], []
def make_inputs(seed, size):
    CALLS.append(threading.current_thread().name)
    CORES.append(sorted(os.sched_getaffinity(0)))
    %s
    return (torch.randn(SIZES[size], generator=g), torch.randn(SIZES[size], generator=g))
'''
OWN_GENERATOR = "g = torch.Generator().manual_seed(seed)"
GLOBAL_RNG = "torch.manual_seed(seed); g = None"


def _program(tmp_path, seeding: str) -> TaskProgram:
    task = tmp_path / "t"
    shutil.copytree(FIX, task)
    (task / "inputs.py").write_text(RECORDING % seeding)
    return TaskProgram(load_task(task), "cpu")


def _threads_of(program: TaskProgram) -> list[str]:
    return program._make.__globals__["CALLS"]


# Two cores to make inputs on, whatever this host has: pinning is recorded, not done (on a 2-core
# host any 2 cores are all of them, so an unpinned thread would look the same anyway).
CORES = [7, 3]


@pytest.fixture
def pinned(monkeypatch):
    monkeypatch.setattr(program_module, "THREADED_INPUTS_MIN_S", 0.0)
    calls = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: calls.append(
        (threading.current_thread().name, pid, sorted(cores))))
    return calls


@pytest.mark.parametrize("seeding", [OWN_GENERATOR, GLOBAL_RNG])
def test_each_seed_gets_the_inputs_its_own_call_would_make_in_order(tmp_path, seeding, pinned):
    program = _program(tmp_path, seeding)
    seeds = [11, 5, 11, 7, 3]
    many = program.make_inputs_many(seeds, "medium", CORES) + program.make_inputs_many(seeds, "medium", CORES)
    alone = [program.make_inputs(s, "medium") for s in seeds * 2]
    assert len(many) == 10
    assert all(torch.equal(a, b) for m, o in zip(many, alone) for a, b in zip(m, o))


def test_threads_after_a_first_serial_call_each_pinned_to_the_cores_given(tmp_path, pinned):
    program = _program(tmp_path, OWN_GENERATOR)
    program.make_inputs_many([1, 2, 3, 4, 5], "medium", CORES)
    calls = _threads_of(program)
    assert calls[0] == threading.current_thread().name
    assert all(name.startswith("perfbench-inputs") for name in calls[1:]) and len(calls) == 5
    assert len(pinned) == 2 and all(n.startswith("perfbench-inputs") and (pid, c) == (0, [3, 7])
                                    for n, pid, c in pinned)


@pytest.mark.parametrize("seeding,cores,min_s", [
    (OWN_GENERATOR, CORES[:1], 0.0),   # one core off the workers' (CpuThreading.spare_cores): as before threads
    (OWN_GENERATOR, CORES, 1.0),       # 4 calls whose first took ~1 us: less than starting threads costs
    (GLOBAL_RNG, CORES, 0.0),          # threads would race on torch's global RNG
])
def test_made_serially_on_the_scorers_own_thread(tmp_path, pinned, monkeypatch, seeding, cores, min_s):
    monkeypatch.setattr(program_module, "THREADED_INPUTS_MIN_S", min_s)
    program = _program(tmp_path, seeding)
    for _ in range(3):
        program.make_inputs_many([1, 2, 3, 4], "medium", cores)
    assert set(_threads_of(program)) == {threading.current_thread().name} and pinned == []


def test_spare_cores_are_the_scorers_less_the_workers(monkeypatch):
    from perfbench.isolation.processes.cpu_threads import CpuThreading
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert CpuThreading.for_task(1, cpus=(1,)).spare_cores() == (0, 2, 3)
    assert CpuThreading.for_task(2, cpus=(0, 1, 2, 3)).spare_cores() == ()


def test_a_maker_that_fails_on_a_thread_fails_the_call_with_its_message(tmp_path, pinned):
    program = _program(tmp_path, OWN_GENERATOR)
    maker = program._make
    calls = _threads_of(program)
    program._make = lambda seed, size: maker(seed, size) if seed != 4 else 1 / 0
    with pytest.raises(UsageError, match="input maker failed for size 'medium'.*ZeroDivisionError"):
        program.make_inputs_many([1, 2, 3, 4, 5], "medium", CORES)
    assert set(calls[1:]) == {"perfbench-inputs-0", "perfbench-inputs-1"}


def test_every_call_of_a_block_gets_its_own_inputs_the_same_for_both_sides():
    """From the scorer's maker to the views the worker calls the kernel on: iteration k's
    arguments are block[k], no two iterations share values, the block's second side gets the
    same block, and the next block another one."""
    from perfbench.isolation.wire.arena import BlockLayout, SharedArena, staged_arguments
    from perfbench.sides.cpu_side import BlockInputs

    spec = load_task(FIX)
    inputs = BlockInputs(TaskProgram(spec, "cpu"), spec.sizes[0])
    block = inputs.get(seed=11, iters=4)
    assert inputs.get(seed=11, iters=4) is block
    later = inputs.get(seed=12, iters=4)
    firsts = [args[0] for args in block + later]
    assert all(not torch.equal(a, b) for i, a in enumerate(firsts) for b in firsts[i + 1:])
    layout = BlockLayout.of(block, start=4032)   # (the largest offset in_page_start draws)
    assert layout.bases[0] == 4032
    arena = SharedArena("test")
    try:
        arena.resize(layout.nbytes)
        layout.write(arena, block)
        u8 = torch.frombuffer(arena.view(), dtype=torch.uint8)
        views = staged_arguments(u8, layout.to_dict())
        assert len(views) == 4
        for k, (args, staged) in enumerate(zip(block, views)):
            assert all(torch.equal(a, v) for a, v in zip(args, staged))
            assert staged[0].data_ptr() - u8.data_ptr() == layout.bases[k]
            assert all(torch.equal(a, v) for a, v in zip(args, layout.read(arena, k)))
        del views, staged, u8   # (the arena's map closes only once no view of it is left)
    finally:
        arena.close()


def test_a_blocks_inputs_start_at_an_in_page_offset_drawn_from_its_seed():
    """#38: the page offset between inputs and outputs is drawn per block, not fixed per worker
    (in_page_start's docstring): every multiple of 64 below a page, from the seed alone."""
    from perfbench.isolation.wire.arena import BlockLayout

    starts = [in_page_start(seed) for seed in range(2000)]
    assert starts == [in_page_start(seed) for seed in range(2000)]
    assert set(starts) == set(range(0, 4096, 64))
    assert max(starts.count(s) for s in set(starts)) < 3 * len(starts) / 64
    with pytest.raises(ValueError, match="multiple of 64"):
        BlockLayout.of([(torch.zeros(3),)], start=32)


def test_an_in_process_block_calls_its_maker_with_a_new_seed_per_call():
    from perfbench.timing.inprocess import InProcessSide
    from perfbench.testing.timers import FakeKernel, FakeTimer

    seeds = []
    side = InProcessSide("b", FakeKernel("b", 1e3), lambda s: seeds.append(s) or (), FakeTimer(seed=1))
    side.run_block(5, seed=3)
    side.run_block(5, seed=4)
    assert len(set(seeds)) == 10
