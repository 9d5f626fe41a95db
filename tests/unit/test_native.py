"""The kernels/cpu convention: which functions a source exports, and which ninja builds them (no
compiler needed)."""
import os
import types
from pathlib import Path

import pytest

from perfbench.task.native_build import exported_functions

REPO = Path(__file__).resolve().parents[2]


def test_exported_functions_are_the_top_level_tensor_definitions(tmp_path):
    src = tmp_path / "k.cpp"
    src.write_text("#include <torch/extension.h>\n"
                   "static torch::Tensor helper(torch::Tensor x) { return x; }\n"
                   "torch::Tensor first(torch::Tensor x) { return helper(x); }\n"
                   "  torch::Tensor indented_is_not_exported(torch::Tensor x);\n"
                   "torch::Tensor  second (torch::Tensor x,\n                      double eps) { return x; }\n"
                   "int64_t not_a_tensor(int64_t n) { return n; }\n")
    assert exported_functions([src]) == ["first", "second"]


def test_the_shipped_cpu_kernels_export_one_function_each():
    sources = sorted((REPO / "kernels" / "cpu").glob("*.cpp"))
    assert exported_functions(sources) == ["layernorm_rows", "spmm_csr", "spmv_csr"]


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_build_uses_the_environments_own_ninja_whatever_path_says(tmp_path, monkeypatch):
    """Two ninja versions rebuild each other's extension (60-70 s a time), so the environment's
    ninja goes first on PATH for the build, and PATH is as it was afterwards."""
    import torch.utils.cpp_extension as cpp

    from perfbench.task import native_build as native

    env_bin = _executable(tmp_path / "venv" / "bin" / "ninja").parent
    other = _executable(tmp_path / "usr" / "bin" / "ninja").parent
    monkeypatch.setattr(native.sys, "executable", str(env_bin / "python"))
    monkeypatch.setenv("PATH", f"{other}{os.pathsep}/bin")
    monkeypatch.setenv("PERFBENCH_BUILD_DIR", str(tmp_path / "build"))
    seen = []
    monkeypatch.setattr(cpp, "load_inline", lambda **kw: seen.append(os.environ["PATH"]) or types.SimpleNamespace(f=1))
    src = tmp_path / "k.cpp"
    src.write_text("torch::Tensor f(torch::Tensor x) { return x; }\n")
    native.load_cpp_extension("perfbench_test_ninja_choice", [src], ["f"])
    assert seen == [f"{env_bin}{os.pathsep}{other}{os.pathsep}/bin"]
    assert os.environ["PATH"] == f"{other}{os.pathsep}/bin"


def test_without_ninja_in_the_environment_paths_ninja_is_used_and_none_at_all_is_one_message(tmp_path, monkeypatch):
    from perfbench.task import native_build as native

    monkeypatch.setattr(native.sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    other = _executable(tmp_path / "usr" / "bin" / "ninja").parent
    monkeypatch.setenv("PATH", str(other))
    assert native._ninja_dir() == str(other)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match=r"need ninja \(pip install ninja, into this Python environment\)"):
        native.load_cpp_extension("perfbench_test_no_ninja", [], [])
