// Row layer norm y = (x - mean) / sqrt(var + eps) * weight + bias, single-threaded and fused.
// A row (a few KB) stays in L1 between its two passes: one for the moments, one that writes the
// output; the unfused torch version streams five full-size temporaries through memory instead.
#include <torch/extension.h>

#include <cmath>

torch::Tensor layernorm_rows(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, double eps) {
  TORCH_CHECK(x.device().is_cpu() && weight.device().is_cpu() && bias.device().is_cpu(),
              "layernorm_rows: all tensors must be on the CPU");
  TORCH_CHECK(x.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32 &&
              bias.scalar_type() == torch::kFloat32, "layernorm_rows: tensors must be float32");
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 1 && bias.dim() == 1, "layernorm_rows: x 2-D, weight and bias 1-D");
  TORCH_CHECK(x.is_contiguous() && weight.is_contiguous() && bias.is_contiguous(),
              "layernorm_rows: all tensors must be contiguous");
  const int64_t rows = x.size(0), cols = x.size(1);
  TORCH_CHECK(weight.size(0) == cols && bias.size(0) == cols, "layernorm_rows: weight/bias length != columns");
  TORCH_CHECK(cols > 0, "layernorm_rows: rows must not be empty");

  const float* xp = x.data_ptr<float>();
  const float* w = weight.data_ptr<float>();
  const float* b = bias.data_ptr<float>();
  torch::Tensor y = torch::empty_like(x);
  float* yp = y.data_ptr<float>();
  // Eight independent partial sums: the compiler may not reassociate a float sum (no fast-math),
  // so one accumulator would serialise every add on its latency.
  constexpr int kLanes = 8;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = xp + r * cols;
    double shift = row[0];  // moments about the first value: no cancellation when |mean| >> std
    float s[kLanes] = {0}, q[kLanes] = {0};
    int64_t j = 0;
    for (; j + kLanes <= cols; j += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const float d = row[j + l] - static_cast<float>(shift);
        s[l] += d;
        q[l] += d * d;
      }
    double sum = 0.0, sq = 0.0;
    for (int l = 0; l < kLanes; ++l) { sum += s[l]; sq += q[l]; }
    for (; j < cols; ++j) {
      const double d = row[j] - shift;
      sum += d;
      sq += d * d;
    }
    const double mean_d = sum / cols;
    const double var = std::max(sq / cols - mean_d * mean_d, 0.0);
    const float mean = static_cast<float>(shift + mean_d);
    const float inv = static_cast<float>(1.0 / std::sqrt(var + eps));
    float* out = yp + r * cols;
    for (int64_t t = 0; t < cols; ++t) out[t] = (row[t] - mean) * inv * w[t] + b[t];
  }
  return y;
}
