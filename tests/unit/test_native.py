"""The kernels/cpu convention: which functions a source exports (no compiler needed)."""
from pathlib import Path

from perfbench.native import exported_functions

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
