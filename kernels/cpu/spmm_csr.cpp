// CSR sparse x dense matrix product Y = A @ B, single-threaded.
// Row r of Y is the sum over the row's nonzeros of val * B[col, :]: the inner loop runs along a
// contiguous row of B and of Y, so it vectorises, and no [nnz, k] temporary is ever made.
#include <torch/extension.h>

torch::Tensor spmm_csr(torch::Tensor crow, torch::Tensor col, torch::Tensor val, torch::Tensor b) {
  TORCH_CHECK(crow.device().is_cpu() && col.device().is_cpu() && val.device().is_cpu() && b.device().is_cpu(),
              "spmm_csr: all tensors must be on the CPU");
  TORCH_CHECK(crow.scalar_type() == torch::kInt64 && col.scalar_type() == torch::kInt64,
              "spmm_csr: crow and col must be int64");
  TORCH_CHECK(val.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32,
              "spmm_csr: val and b must be float32");
  TORCH_CHECK(crow.dim() == 1 && col.dim() == 1 && val.dim() == 1 && b.dim() == 2,
              "spmm_csr: crow, col, val must be 1-D and b 2-D");
  TORCH_CHECK(crow.is_contiguous() && col.is_contiguous() && val.is_contiguous() && b.is_contiguous(),
              "spmm_csr: all tensors must be contiguous");
  TORCH_CHECK(crow.size(0) >= 1 && col.size(0) == val.size(0), "spmm_csr: malformed CSR arrays");

  const int64_t rows = crow.size(0) - 1, k = b.size(1), inner = b.size(0);
  const int64_t* rp = crow.data_ptr<int64_t>();
  TORCH_CHECK(rp[0] == 0 && rp[rows] == col.size(0), "spmm_csr: crow must start at 0 and end at nnz");
  const int64_t* ci = col.data_ptr<int64_t>();
  const float* v = val.data_ptr<float>();
  const float* bp = b.data_ptr<float>();

  torch::Tensor y = torch::zeros({rows, k}, b.options());
  float* yp = y.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float* out = yp + r * k;
    for (int64_t j = rp[r]; j < rp[r + 1]; ++j) {
      const int64_t c = ci[j];
      TORCH_CHECK(c >= 0 && c < inner, "spmm_csr: column index out of range");
      const float a = v[j];
      const float* brow = bp + c * k;
      for (int64_t t = 0; t < k; ++t) out[t] += a * brow[t];
    }
  }
  return y;
}
