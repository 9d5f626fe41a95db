// Row L2 norm out[r] = sqrt(sum_j x[r, j]^2) for a float32 [rows, cols] matrix, one pass.
// One block per row: each thread sums the squares of a strided slice (coalesced loads), then a
// warp-shuffle tree and one shared-memory step combine the block's partial sums.  The unfused
// torch version writes x*x to memory and reads it back for the sum.
// Launch: grid (rows), block (256); compiled with NVRTC by CuPy (perfbench.native.load_cuda_kernels).

extern "C" __global__ void row_l2_norm(const float* __restrict__ x, float* __restrict__ out,
                                       long long rows, long long cols) {
  const long long row = blockIdx.x;
  if (row >= rows) return;
  const float* p = x + row * cols;
  float acc = 0.0f;
  for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = p[j];
    acc += v * v;
  }
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);

  __shared__ float warp_sums[32];
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = acc;
  __syncthreads();
  if (warp == 0) {
    const int warps = (blockDim.x + 31) >> 5;
    acc = lane < warps ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if (lane == 0) out[row] = sqrtf(acc);
  }
}
