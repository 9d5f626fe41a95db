"""What of a task a sandboxed candidate may see: `[sandbox] shared` in task.toml, and the
allow-list of files `candidate_files` hands the sandbox."""
import shutil
from pathlib import Path

import pytest

from perfbench.core.errors import UsageError
from perfbench.pipeline.sandboxes import candidate_files
from perfbench.task.spec import load_task

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


def _packaged_task(tmp_path, monkeypatch, project):
    """A task naming `fakecc` in [sandbox] packages, fakecc installed from `project`/src."""
    (project / "src" / "fakecc").mkdir(parents=True)
    (project / "src" / "fakecc" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text("[project]\nname = 'fakecc'\n")
    (project / "include").mkdir()
    monkeypatch.syspath_prepend(str(project / "src"))
    task = _task(tmp_path)
    with open(task / "task.toml", "a") as f:
        f.write('\n[sandbox]\npackages = ["fakecc"]\n')
    return load_task(task)


def test_a_named_package_is_shown_with_the_source_tree_it_was_installed_from(tmp_path, monkeypatch):
    spec = _packaged_task(tmp_path, monkeypatch, tmp_path / "checkouts" / "fakecc")
    assert spec.packages == ("fakecc",) and type(spec).from_dict(spec.to_dict()).packages == ("fakecc",)
    expose, _ = candidate_files(spec, spec.file("baseline"))
    assert expose[-1] == str((tmp_path / "checkouts" / "fakecc").resolve())   # its include/ with it


def test_a_package_whose_tree_holds_the_task_is_refused(tmp_path, monkeypatch):
    spec = _packaged_task(tmp_path, monkeypatch, tmp_path)   # the project root is above tasks/t
    with pytest.raises(UsageError, match="'fakecc' comes from .* which holds .*tasks/t"):
        candidate_files(spec, spec.file("baseline"))


@pytest.mark.parametrize("packages,message", [(["not a name"], "importable package names"),
                                              (["nowhere_installed_pkg"], "'nowhere_installed_pkg' is not installed")])
def test_a_bad_package_entry_is_one_line(tmp_path, packages, message):
    task = _task(tmp_path)
    with open(task / "task.toml", "a") as f:
        f.write(f"\n[sandbox]\npackages = {packages!r}\n".replace("'", '"'))
    with pytest.raises(UsageError, match=message) as exc:
        candidate_files(load_task(task), task / "baseline.py")
    assert "\n" not in str(exc.value)


def test_a_failed_cpp_build_is_described_by_its_first_compiler_error():
    from perfbench.task.user_files import describe_exception
    exc = RuntimeError("Error building extension 'k1': [1/2] c++ -MMD -MF main.o.d -O3 -c main.cpp\n"
                       "main.cpp: In function 'evaluate':\nmain.cpp:602:19: error: 'pB0' was not declared\n"
                       "main.cpp:700:1: error: expected '}'\nninja: build stopped")
    assert describe_exception(exc) == "RuntimeError: Error building extension 'k1': main.cpp:602:19: error: 'pB0' was not declared"
    assert describe_exception(ValueError("boom")) == "ValueError: boom"
