// out = x^T for a float32 [rows, cols] matrix, through 32x32 shared-memory tiles.
// A block reads a tile with coalesced row loads, and writes it transposed with coalesced row
// stores; the tile is 33 wide so a column read hits 32 different banks.  Reading x.t() directly
// (what x.t().contiguous() does) makes one of the two sides strided.
// Launch: grid (ceil(cols / 32), ceil(rows / 32)), block (32, 8); rows and cols are int64.

#define TILE 32
#define ROWS_PER_PASS 8

extern "C" __global__ void transpose_tiled(const float* __restrict__ x, float* __restrict__ out,
                                           long long rows, long long cols) {
  __shared__ float tile[TILE][TILE + 1];
  long long c = blockIdx.x * (long long)TILE + threadIdx.x;
  long long r = blockIdx.y * (long long)TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (c < cols && r + j < rows) tile[threadIdx.y + j][threadIdx.x] = x[(r + j) * cols + c];
  __syncthreads();
  // Output row = input column: the block's tile lands at (blockIdx.x, blockIdx.y) swapped.
  c = blockIdx.y * (long long)TILE + threadIdx.x;
  r = blockIdx.x * (long long)TILE + threadIdx.y;
  for (int j = 0; j < TILE; j += ROWS_PER_PASS)
    if (c < rows && r + j < cols) out[(r + j) * rows + c] = tile[threadIdx.x][threadIdx.y + j];
}
