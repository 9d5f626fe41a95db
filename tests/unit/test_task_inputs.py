"""TaskProgram.make_inputs_many: a block's input sets made on threads where the task's maker keeps
to its own generator (docs/tasks.md), serially where it draws from the global RNG."""
import os
import shutil
import threading
from pathlib import Path

import pytest
import torch

from perfbench import task_runtime
from perfbench.task_runtime import TaskProgram
from perfbench.tasks import load_task

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_task"
MULTI_CORE = len(os.sched_getaffinity(0)) >= 2

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


@pytest.mark.parametrize("seeding", [OWN_GENERATOR, GLOBAL_RNG])
def test_each_seed_gets_the_inputs_its_own_call_would_make_in_order(tmp_path, seeding, monkeypatch):
    monkeypatch.setattr(task_runtime, "THREADED_INPUTS_MIN_S", 0.0)
    program = _program(tmp_path, seeding)
    seeds = [11, 5, 11, 7, 3]
    many = program.make_inputs_many(seeds, "medium") + program.make_inputs_many(seeds, "medium")
    alone = [program.make_inputs(s, "medium") for s in seeds * 2]
    assert len(many) == 10
    assert all(torch.equal(a, b) for m, o in zip(many, alone) for a, b in zip(m, o))


@pytest.mark.skipif(not MULTI_CORE, reason="threads are used only where this process may run on 2+ cores")
def test_a_maker_with_its_own_generator_runs_on_threads_after_a_first_serial_call(tmp_path, monkeypatch):
    monkeypatch.setattr(task_runtime, "THREADED_INPUTS_MIN_S", 0.0)
    program = _program(tmp_path, OWN_GENERATOR)
    program.make_inputs_many([1, 2, 3, 4, 5], "medium")
    calls = _threads_of(program)
    assert calls[0] == threading.current_thread().name
    assert all(name.startswith("perfbench-inputs") for name in calls[1:]) and len(calls) == 5


def test_threads_pin_themselves_to_the_cores_given_and_one_core_means_serial(tmp_path, monkeypatch):
    """A block's inputs are made off the workers' cores (CpuThreading.spare_cores); with one such
    core, serially on the scorer's own thread, as before threads.  (Pinning is recorded, not
    done: on a 2-core host any 2 cores are all of them, so an unpinned thread looks the same.)"""
    monkeypatch.setattr(task_runtime, "THREADED_INPUTS_MIN_S", 0.0)
    pinned = []
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cores: pinned.append(
        (threading.current_thread().name, pid, sorted(cores))))
    program = _program(tmp_path, OWN_GENERATOR)
    program.make_inputs_many([1, 2, 3, 4, 5], "medium", [7, 3])
    assert len(pinned) == 2 and all(n.startswith("perfbench-inputs") and (pid, c) == (0, [3, 7])
                                    for n, pid, c in pinned)
    program.make_inputs_many([1, 2, 3, 4], "medium", [3])
    assert len(pinned) == 2 and set(_threads_of(program)[5:]) == {threading.current_thread().name}


def test_small_work_stays_serial(tmp_path, monkeypatch):
    """Starting threads costs ~1 ms: 4 calls of a size whose first call took 1 us are made here."""
    monkeypatch.setattr(task_runtime, "THREADED_INPUTS_MIN_S", 1.0)
    program = _program(tmp_path, OWN_GENERATOR)
    for _ in range(3):
        program.make_inputs_many([1, 2, 3, 4], "medium")
    assert set(_threads_of(program)) == {threading.current_thread().name}


def test_a_maker_that_draws_from_the_global_rng_is_never_threaded(tmp_path, monkeypatch):
    monkeypatch.setattr(task_runtime, "THREADED_INPUTS_MIN_S", 0.0)
    program = _program(tmp_path, GLOBAL_RNG)
    for _ in range(3):
        program.make_inputs_many([1, 2, 3, 4], "medium")
    assert set(_threads_of(program)) == {threading.current_thread().name}


def test_spare_cores_are_the_scorers_less_the_workers(monkeypatch):
    from perfbench.isolation.cpu_threads import CpuThreading
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert CpuThreading.for_task(1, cpus=(1,)).spare_cores() == (0, 2, 3)
    assert CpuThreading.for_task(2, cpus=(0, 1, 2, 3)).spare_cores() == ()
