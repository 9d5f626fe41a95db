"""One call's work, counted (task/work.py): bytes from the actual tensors, flops from the
reference under torch's FlopCounterMode."""
from pathlib import Path

import pytest
import torch

from perfbench.task.program import TaskProgram
from perfbench.task.spec import load_task
from perfbench.task.work import WORK_COUNTED, Work, count_work, tensor_bytes

TASKS = Path(__file__).resolve().parents[2] / "tasks"


def test_a_gemm_is_counted_2mkn_flops_and_its_three_matrices_bytes():
    program = TaskProgram(load_task(TASKS / "small_gemm"), "cpu")
    m, k, n = 128, 256, 128
    work = count_work(program, "medium", seed=3)
    assert work == Work(bytes=4 * (m * k + k * n + m * n), flops=2 * m * k * n, dtype="float32")
    assert (work.bytes_source, work.flops_source) == (WORK_COUNTED, WORK_COUNTED)


def test_a_softmax_has_no_counted_flops_so_its_bound_is_memory_only():
    program = TaskProgram(load_task(TASKS / "row_softmax"), "cpu")
    work = count_work(program, "small")
    assert work.bytes == 2 * 4 * 64 * 128 and work.flops is None and work.flops_source is None


def test_bytes_count_every_tensor_however_nested():
    x = torch.zeros(3, 4, dtype=torch.float64)
    assert tensor_bytes((x, [x[:1], {"y": torch.zeros(2, dtype=torch.int8)}], 7, "s")) == 96 + 32 + 2


@pytest.mark.parametrize("fields,message", [(dict(bytes=0, flops=None), "positive number of bytes"),
                                            (dict(bytes=8, flops=0), "flops must be positive")])
def test_work_that_cannot_be_is_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        Work(**fields)


def test_what_a_task_declares_wins_over_the_count_and_says_so(tmp_path):
    import shutil

    shutil.copytree(TASKS / "small_gemm", tmp_path / "g")
    toml = tmp_path / "g" / "task.toml"
    toml.write_text(toml.read_text() + '\n[work]\nflops = "none"\nbytes = 1000\n')
    work = count_work(TaskProgram(load_task(tmp_path / "g"), "cpu"), "medium")
    assert (work.bytes, work.flops, work.bytes_source, work.flops_source) == (1000, None, "declared", "declared")
    small = count_work(TaskProgram(load_task(tmp_path / "g"), "cpu"), "small")   # declared for the timed size only
    assert small.bytes_source == "counted" and small.flops == 2 * 16 * 32 * 8


def test_the_sparse_tasks_declare_no_compute_bound():
    for name in ("csr_spmv", "csr_spmm"):
        work = count_work(TaskProgram(load_task(TASKS / name), "cpu"), "small")
        assert load_task(TASKS / name).work == {"flops": "none"} and work.flops_source == "counted"
        timed = count_work(TaskProgram(load_task(TASKS / name), "cpu"), load_task(TASKS / name).timed_size)
        assert timed.flops is None and timed.flops_source == "declared"


@pytest.mark.parametrize("table,message", [
    ('flops = -1', "flops must be a positive number or .none., got -1"),
    ('bytes = "none"', "bytes must be a positive number, got 'none'"),
    ('flop = 3', "unknown field 'flop'")])
def test_a_bad_work_table_is_one_line(tmp_path, table, message):
    import shutil

    from perfbench.core.errors import UsageError

    shutil.copytree(TASKS / "small_gemm", tmp_path / "g")
    toml = tmp_path / "g" / "task.toml"
    toml.write_text(toml.read_text() + f"\n[work]\n{table}\n")
    with pytest.raises(UsageError, match=message):
        load_task(tmp_path / "g")
