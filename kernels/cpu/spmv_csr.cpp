// CSR sparse matrix-vector product y = A @ x, single-threaded.
// Built into the repo's one C++ extension, perfbench_cpu_kernels (see perfbench/native.py).
#include <torch/extension.h>

torch::Tensor spmv_csr(torch::Tensor crow, torch::Tensor col, torch::Tensor val, torch::Tensor x) {
  TORCH_CHECK(crow.device().is_cpu() && col.device().is_cpu() && val.device().is_cpu() && x.device().is_cpu(),
              "spmv_csr: all tensors must be on the CPU");
  TORCH_CHECK(crow.scalar_type() == torch::kInt64 && col.scalar_type() == torch::kInt64,
              "spmv_csr: crow and col must be int64");
  TORCH_CHECK(val.scalar_type() == torch::kFloat32 && x.scalar_type() == torch::kFloat32,
              "spmv_csr: val and x must be float32");
  TORCH_CHECK(crow.is_contiguous() && col.is_contiguous() && val.is_contiguous() && x.is_contiguous(),
              "spmv_csr: all tensors must be contiguous");
  TORCH_CHECK(crow.dim() == 1 && col.dim() == 1 && val.dim() == 1 && x.dim() == 1,
              "spmv_csr: all tensors must be 1-D");
  TORCH_CHECK(crow.size(0) >= 1, "spmv_csr: crow must have at least one entry");
  TORCH_CHECK(col.size(0) == val.size(0), "spmv_csr: col and val must have the same length");

  const int64_t rows = crow.size(0) - 1;
  const int64_t* rp = crow.data_ptr<int64_t>();
  TORCH_CHECK(rp[0] == 0 && rp[rows] == col.size(0), "spmv_csr: crow must start at 0 and end at nnz");
  const int64_t* ci = col.data_ptr<int64_t>();
  const float* v = val.data_ptr<float>();
  const float* xp = x.data_ptr<float>();

  torch::Tensor y = torch::empty({rows}, val.options());
  float* yp = y.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t end = rp[r + 1];
    float acc = 0.0f;
    for (int64_t j = rp[r]; j < end; ++j) acc += v[j] * xp[ci[j]];
    yp[r] = acc;
  }
  return y;
}
