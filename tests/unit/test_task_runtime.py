"""TaskProgram.make_many: one block's fresh inputs on several threads, identical to making them
one by one, and serial where the task's input maker shares the global RNG (KernelBench)."""
from pathlib import Path

import pytest
import torch

from perfbench import task_runtime
from perfbench.errors import UsageError
from perfbench.task_runtime import TaskProgram
from perfbench.tasks import load_task

FIX = Path(__file__).resolve().parents[1] / "fixtures"
REPO = FIX.parents[1]


@pytest.mark.parametrize("task,size", [(FIX / "tiny_task", "medium"), (REPO / "tasks" / "row_softmax", "small")])
def test_many_inputs_are_the_ones_made_one_by_one_in_seed_order(task, size):
    program = TaskProgram(load_task(task), "cpu")
    seeds = [11, 3, 7, 5, 2, 13]
    many = program.make_many(seeds, size)
    assert len(many) == len(seeds)
    for seed, got in zip(seeds, many):
        want = program.make_inputs(seed, size)
        assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))


def test_a_kernelbench_problem_makes_its_inputs_on_one_thread(monkeypatch):
    """Its get_inputs draws from the global RNG after torch.manual_seed(seed): two threads would
    interleave their draws, and the inputs would no longer be the seed's."""
    def no_threads(*args, **kwargs):
        raise AssertionError("a KernelBench problem's inputs were made on a thread pool")

    monkeypatch.setattr(task_runtime, "ThreadPoolExecutor", no_threads)
    program = TaskProgram(load_task(FIX / "kernelbench" / "19_ReLU_matmul.py"), "cpu")
    many = program.make_many([4, 9], "default")
    assert all(torch.equal(a, b) for a, b in zip(many[1], program.make_inputs(9, "default")))


def test_a_failing_input_maker_is_named_from_a_thread_too():
    program = TaskProgram(load_task(FIX / "tiny_task"), "cpu")
    with pytest.raises(UsageError, match=r"tiny_axpy: input maker failed for size 'huge'"):
        program.make_many([1, 2, 3], "huge")
