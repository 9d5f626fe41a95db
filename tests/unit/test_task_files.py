"""What of a task a sandboxed candidate may see: `[sandbox] shared` in task.toml, and the
allow-list of files `candidate_files` hands the sandbox."""
import shutil
from pathlib import Path

import pytest

from perfbench.errors import UsageError
from perfbench.pipeline.gate import candidate_files
from perfbench.tasks import load_task

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _task(tmp_path, shared=None):
    task = tmp_path / "tasks" / "t"
    shutil.copytree(FIX / "tiny_task", task)
    (task / "__pycache__").mkdir()
    (task / "__pycache__" / "solution.cpython-311.pyc").write_bytes(b"x")
    if shared is not None:
        with open(task / "task.toml", "a") as f:
            f.write(f"\n[sandbox]\nshared = {shared!r}\n".replace("'", '"'))
    return task


def test_shared_paths_resolve_relative_to_the_task(tmp_path):
    (tmp_path / "kernels" / "cpu").mkdir(parents=True)
    spec = load_task(_task(tmp_path, ["../../kernels/cpu"]))
    assert spec.shared == (str((tmp_path / "kernels" / "cpu").resolve()),)
    assert type(spec).from_dict(spec.to_dict()).shared == spec.shared   # survives the trip to the worker


@pytest.mark.parametrize("shared,message", [
    (["../../nowhere"], "[sandbox] shared entry '../../nowhere' does not exist"),
    ("kernels", "field 'shared' has the wrong type (str)"),
])
def test_a_bad_shared_entry_is_a_one_line_error_naming_it(tmp_path, shared, message):
    with pytest.raises(UsageError, match=r"task\.toml") as exc:
        load_task(_task(tmp_path, shared))
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_the_candidate_sees_its_file_the_tasks_top_level_and_shared_never_the_secrets(tmp_path):
    (tmp_path / "kernels").mkdir()
    task = _task(tmp_path, ["../../kernels"])
    cand = tmp_path / "cand.py"
    cand.write_text("def kernel(x, y): return x + y\n")
    expose, hide = candidate_files(load_task(task), cand)
    root = task.resolve()
    assert expose == (str(cand.resolve()), *(str(root / n) for n in ("baseline.py", "inputs.py", "starter.py", "task.toml")),
                      str((tmp_path / "kernels").resolve()))
    assert hide == (str(root / "reference.py"), str(root / "solution.py"), str(root / "__pycache__"))


def test_scoring_the_tasks_own_solution_exposes_it(tmp_path):
    task = _task(tmp_path)
    expose, hide = candidate_files(load_task(task), task / "solution.py")
    assert str(task.resolve() / "solution.py") in expose and str(task.resolve() / "solution.py") not in hide
    assert str(task.resolve() / "reference.py") in hide


def test_timing_mode_is_read_and_checked(tmp_path):
    task = tmp_path / "t"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "tiny_task", task)
    assert load_task(task).timing_mode == "events"
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(toml.replace("[timing]\n", '[timing]\nmode = "auto"\n'))
    spec = load_task(task)
    assert spec.timing_mode == "auto" and type(spec).from_dict(spec.to_dict()).timing_mode == "auto"
    (task / "task.toml").write_text(toml.replace("[timing]\n", '[timing]\nmode = "fast"\n'))
    with pytest.raises(UsageError, match=r"\[timing\] mode must be one of events\|graph\|auto, got 'fast'"):
        load_task(task)
