// The fully fused coordinate MLP (fused_mlp_kernels.h) in the manner of
// tiny-cuda-nn's fully fused MLP, in f32 FMA: a block takes `rows` (64 or
// 32) rows of the features and carries them through every layer with the
// activations in shared memory, loading one layer's weights at a time into
// shared memory.
//   forward   activations ping-pong between two (rows, hidden + in) buffers;
//             the features sit after the hidden columns of both, so the skip
//             layer reads [h, x] in place (as fk::cat({h, x}, 1) lays it out)
//   backward  dL/dz flows back through the layers the same way; each layer's
//             dL/dz goes to global memory for the parameter gradient, which a
//             third kernel sums per chunk of rows (the partials), then
//             launch_column_sums sums the chunks in order: no atomics
// Every product is a (rows x K) x (K x cols) tile product with 4x4 register
// tiles per thread (tile_product). Widths are padded to multiples of 4 with
// zero weights; activations of rows past N are computed and never stored.
// Autocast (template P: f16 or bf16) rounds the hidden layers' operands where
// they enter shared memory (features, weights, activations, dL/dz), at
// fused_mlp_cells.h's rounding points; the products of two rounded values
// are exact in f32, so the sums stay the f32 kernel's. Shared memory holds
// the rounded values as f32: the geometry and row counts are one for all.
#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "fk/cuda/common.cuh"
#include "fk/error.h"
#include "nefi/cuda/fused_mlp_cells.h"
#include "nefi/cuda/fused_mlp_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::check_cuda;
using fk::cuda::detail::check_launch;

__host__ __device__ inline int round4(int v) {
  return (v + 3) / 4 * 4;
}
__host__ __device__ inline int odd(int v) {
  return v | 1;  // an odd row stride: rows 4 apart fall on different banks
}
__host__ __device__ inline int max_of(int a, int b) {
  return a > b ? a : b;
}

// Shared-memory geometry (floats) of both kernels for one shape and row count.
struct Geometry {
  int hp, op, dp;          // hidden, out and in rounded up to multiples of 4
  int lda, ldw;            // forward: activation row stride, weight row stride
  int wt_floats;           // forward: the largest transposed weight
  int ldg, ldx;            // backward: dL/dz and dL/dx row strides
  int64_t forward_floats;  // per block
  int64_t backward_floats;
};

__host__ __device__ inline Geometry geometry(const FusedMlpShape& s, int rows) {
  Geometry g;
  g.hp = round4(s.hidden);
  g.op = round4(s.out);
  g.dp = round4(s.in);
  const int cols = max_of(g.hp, g.op);
  g.lda = odd(g.hp + s.in);
  // A multiple of 4 (float4 rows) past cols, an odd number of float4s: the
  // transposing stores, a column at a time, then spread over 8 banks.
  g.ldw = 4 * ((cols / 4 + 1) | 1);
  const int k_max = max_of(s.skip > 0 ? g.hp + s.in : s.in, s.hidden);
  g.wt_floats = k_max * g.ldw;
  g.forward_floats = 2LL * rows * g.lda + g.wt_floats + cols;
  g.ldg = odd(cols);
  g.ldx = odd(g.hp + g.dp);
  const int w_back =
      max_of(s.out * g.hp, s.hidden * (s.skip > 0 ? g.hp + g.dp : max_of(g.hp, g.dp)));
  g.backward_floats = w_back + static_cast<int64_t>(rows) * (g.ldg + g.ldx);
  return g;
}

// out(r, j) = sum_{k < K} a[r lda + k] b[k ldb + j] for r < rows, j < cols
// (cols and ldb multiples of 4, b 16-byte aligned), handed to epi(r, j, v[4])
// for columns j .. j + 3. Thread t computes the 4x4 tiles t, t + blockDim, ...
// with the column tile fastest: a warp reads one float4 run of b and at most
// a few rows of a (lda odd: no bank conflicts between them).
template <typename Epilogue>
__device__ inline void tile_product(const float* a, int lda, const float* b, int ldb, int K,
                                    int rows, int cols, Epilogue&& epi) {
  const int col_tiles = cols / 4;
  const int tiles = rows / 4 * col_tiles;
  for (int t = threadIdx.x; t < tiles; t += blockDim.x) {
    const int r0 = t / col_tiles * 4, j0 = t % col_tiles * 4;
    float acc[4][4] = {};
    const float* ar = a + r0 * lda;
#pragma unroll 4
    for (int k = 0; k < K; ++k) {
      const float4 bv = *reinterpret_cast<const float4*>(b + k * ldb + j0);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float av = ar[i * lda + k];
        acc[i][0] = fmaf(av, bv.x, acc[i][0]);
        acc[i][1] = fmaf(av, bv.y, acc[i][1]);
        acc[i][2] = fmaf(av, bv.z, acc[i][2]);
        acc[i][3] = fmaf(av, bv.w, acc[i][3]);
      }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) epi(r0 + i, j0, acc[i]);
  }
}

// Where layer l's input sits in a forward activation row [h (hp) | x (in)]:
// from column `offset`, K columns; weight column of input column k: k, except
// for the skip layer, whose columns [hidden, hp) are padding (zero weights)
// and whose x columns start at hp in the row but at hidden in the weight.
struct InputSpan {
  int offset, K, gap_at, gap;
  __device__ int weight_column(int k) const { return k < gap_at ? k : k - gap; }
  __device__ bool padding(int k) const { return k >= gap_at && k < gap_at + gap; }
};

__device__ inline InputSpan input_span(const FusedMlpShape& s, const Geometry& g, int l) {
  if (l == 0) return {g.hp, s.in, s.in, 0};
  if (l == s.skip) return {0, g.hp + s.in, s.hidden, g.hp - s.hidden};
  return {0, s.hidden, s.hidden, 0};
}

template <int P>
__global__ void __launch_bounds__(kFusedThreads)
    fused_forward_kernel(FusedMlpShape s, const float* __restrict__ x,
                         const float* __restrict__ params, int64_t n, int rows, float* zs,
                         float* y) {
  extern __shared__ __align__(16) float smem[];
  const Geometry g = geometry(s, rows);
  const int buf_floats = rows * g.lda;  // two activation buffers, then the weight
  float* wt = smem + 2 * buf_floats;
  float* bias = wt + g.wt_floats;
  const int64_t row0 = blockIdx.x * static_cast<int64_t>(rows);
  for (int e = threadIdx.x; e < rows * s.in; e += blockDim.x) {
    const int r = e / s.in, k = e % s.in;
    // Only hidden layers read the features: rounded once here.
    const float v = row0 + r < n ? fused_operand<P>(x[(row0 + r) * s.in + k]) : 0.f;
    smem[r * g.lda + g.hp + k] = v;
    smem[buf_floats + r * g.lda + g.hp + k] = v;
  }
  int cur = 0;
  for (int l = 0; l <= s.depth; ++l) {
    const bool head = l == s.depth;
    const FusedLayer L = fused_mlp_layer(s, l);
    const int cols = head ? g.op : g.hp;
    const InputSpan in = input_span(s, g, l);
    const float* W = params + L.weight;
    // wt[k][c] = W[c][weight_column(k)]: the global reads run along W's rows.
    for (int e = threadIdx.x; e < cols * in.K; e += blockDim.x) {
      const int c = e / in.K, k = e % in.K;
      wt[k * g.ldw + c] = c < L.rows && !in.padding(k)
                              ? fused_layer_operand<P>(s, l, W[c * L.fan_in + in.weight_column(k)])
                              : 0.f;
    }
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
      bias[c] = c < L.rows ? W[static_cast<int64_t>(L.rows) * L.fan_in + c] : 0.f;
    __syncthreads();
    const float* a = smem + cur * buf_floats + in.offset;
    float* next = smem + (cur ^ 1) * buf_floats;
    float* z = zs ? zs + l * n * s.hidden : nullptr;
    const int next_layer = l + 1;  // the layer that reads this one's activations
    tile_product(a, g.lda, wt, g.ldw, in.K, rows, cols, [&](int r, int j0, const float* acc) {
      const int64_t row = row0 + r;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = j0 + j;
        const float v = acc[j] + bias[c];
        if (head) {
          if (row < n && c < s.out) y[row * s.out + c] = v;
        } else {
          if (z && row < n && c < s.hidden) z[row * s.hidden + c] = v;
          next[r * g.lda + c] =
              fused_layer_operand<P>(s, next_layer, fused_activate(s.act, v, s.w0));
        }
      }
    });
    __syncthreads();
    cur ^= 1;
  }
}

// Weight of layer l as w[c][k] (c < its rows, k < ldw, zero padded) for the
// backward's dL/dx = dL/dz W, in the layout of the forward's activation row.
template <int P>
__device__ inline void load_weight_rows(const FusedMlpShape& s, const Geometry& g,
                                        const float* params, int l, int ldw, float* w) {
  const FusedLayer L = fused_mlp_layer(s, l);
  const float* W = params + L.weight;
  const InputSpan in = l == s.depth ? InputSpan{0, s.hidden, s.hidden, 0} : input_span(s, g, l);
  for (int e = threadIdx.x; e < L.rows * ldw; e += blockDim.x) {
    const int c = e / ldw, k = e % ldw;
    w[e] = k < in.K && !in.padding(k)
               ? fused_layer_operand<P>(s, l, W[c * L.fan_in + in.weight_column(k)])
               : 0.f;
  }
}

template <int P>
__global__ void __launch_bounds__(kFusedThreads)
    fused_backward_kernel(FusedMlpShape s, const float* __restrict__ params,
                          const float* __restrict__ zs, const float* __restrict__ gy, int64_t n,
                          int rows, float* gzs, float* dx) {
  extern __shared__ __align__(16) float smem[];
  const Geometry g = geometry(s, rows);
  const int w_floats =
      static_cast<int>(g.backward_floats - static_cast<int64_t>(rows) * (g.ldg + g.ldx));
  float* w = smem;
  float* G = smem + w_floats;   // dL/dz of the current layer, (rows, ldg)
  float* X = G + rows * g.ldg;  // dL/d(its input row), (rows, ldx) in the forward's row layout
  const int64_t row0 = blockIdx.x * static_cast<int64_t>(rows);
  for (int e = threadIdx.x; e < rows * s.out; e += blockDim.x) {
    const int r = e / s.out, c = e % s.out;
    G[r * g.ldg + c] = row0 + r < n ? gy[(row0 + r) * s.out + c] : 0.f;
  }
  load_weight_rows<P>(s, g, params, s.depth, g.hp, w);
  __syncthreads();
  tile_product(G, g.ldg, w, g.hp, s.out, rows, g.hp, [&](int r, int j0, const float* acc) {
#pragma unroll
    for (int j = 0; j < 4; ++j) X[r * g.ldx + j0 + j] = acc[j];
  });
  __syncthreads();
  for (int l = s.depth - 1; l >= 0; --l) {
    const float* z = zs + l * n * s.hidden;
    float* gz = gzs + l * n * s.hidden;
    for (int e = threadIdx.x; e < rows * g.hp; e += blockDim.x) {
      const int r = e / g.hp, c = e % g.hp;
      const int64_t row = row0 + r;
      float v = 0.f;
      if (c < s.hidden && row < n) {
        v = fused_activation_grad(s.act, X[r * g.ldx + c], z[row * s.hidden + c], s.w0);
        gz[row * s.hidden + c] = v;  // f32: db sums it unrounded
      }
      G[r * g.ldg + c] = fused_operand<P>(v);
    }
    const int ldw = l == 0 ? g.dp : l == s.skip ? g.hp + g.dp : g.hp;
    if (l > 0 || dx) load_weight_rows<P>(s, g, params, l, ldw, w);
    __syncthreads();
    if (l > 0) {
      // The skip layer also writes dL/dx's share at [hp, hp + dp) of X, which
      // layers below it leave alone until layer 0 adds it.
      tile_product(G, g.ldg, w, ldw, s.hidden, rows, ldw, [&](int r, int j0, const float* acc) {
#pragma unroll
        for (int j = 0; j < 4; ++j) X[r * g.ldx + j0 + j] = acc[j];
      });
    } else if (dx) {
      tile_product(G, g.ldg, w, ldw, s.hidden, rows, ldw, [&](int r, int j0, const float* acc) {
        const int64_t row = row0 + r;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int k = j0 + j;
          if (row < n && k < s.in)
            dx[row * s.in + k] = s.skip > 0 ? acc[j] + X[r * g.ldx + g.hp + k] : acc[j];
        }
      });
    }
    __syncthreads();
  }
}

// Parameter-gradient partials: block (tile, layer, chunk) sums, over the
// chunk's rows in order, a 64x64 tile of layer l's [dW | db] = gz^T [x_in | 1]
// (gz: dL/dz of the layer, or dL/dy for the head).
constexpr int kGradTile = 64, kGradStep = 16;
// fused_param_partials_kernel gives thread t the 4x4 sub-tile (t / 16, t % 16)
// of the 64x64 tile: one per thread of its kFusedThreads.
static_assert(kFusedThreads == (kGradTile / 4) * (kGradTile / 4), "a 4x4 sub-tile per thread");

// Column k of layer l's input row [x_in | 1] as its product operand.
template <int P>
__device__ inline float layer_input(const FusedMlpShape& s, const float* x, const float* zs,
                                    int64_t n, int l, int64_t row, int k, int fan_in) {
  if (k == fan_in) return 1.f;  // the bias column
  float v;
  if (l == 0)
    v = x[row * s.in + k];
  else if (k >= s.hidden)
    v = x[row * s.in + k - s.hidden];  // the skip layer's features
  else
    v = fused_activate(s.act, zs[(l - 1) * n * s.hidden + row * s.hidden + k], s.w0);
  return fused_layer_operand<P>(s, l, v);
}

template <int P>
__global__ void __launch_bounds__(kFusedThreads)
    fused_param_partials_kernel(FusedMlpShape s, const float* __restrict__ x,
                                const float* __restrict__ zs, const float* __restrict__ gzs,
                                const float* __restrict__ gy, int64_t n, int64_t chunk_rows,
                                int64_t numel, float* partials) {
  __shared__ __align__(16) float gs[kGradStep][kGradTile];
  __shared__ __align__(16) float xs[kGradStep][kGradTile];
  // Autocast: gz rounded for dW's columns; gs keeps it f32 for db's.
  constexpr bool kRounds = P != kFusedF32;
  __shared__ __align__(16) float gr[kRounds ? kGradStep : 1][kGradTile];
  const int l = blockIdx.y;
  const FusedLayer L = fused_mlp_layer(s, l);
  const int k_tiles = (L.fan_in + 1 + kGradTile - 1) / kGradTile;
  const int c_tiles = (L.rows + kGradTile - 1) / kGradTile;
  if (static_cast<int>(blockIdx.x) >= c_tiles * k_tiles) return;
  const int c0 = blockIdx.x / k_tiles * kGradTile, k0 = blockIdx.x % k_tiles * kGradTile;
  const float* gz = l == s.depth ? gy : gzs + l * n * s.hidden;
  const int64_t begin = blockIdx.z * chunk_rows;
  const int64_t end = begin + chunk_rows < n ? begin + chunk_rows : n;
  const int tc = threadIdx.x / (kGradTile / 4) * 4, tk = threadIdx.x % (kGradTile / 4) * 4;
  float acc[4][4] = {};
  for (int64_t r0 = begin; r0 < end; r0 += kGradStep) {
    for (int e = threadIdx.x; e < kGradStep * kGradTile; e += blockDim.x) {
      const int rr = e / kGradTile, cc = e % kGradTile;
      const int64_t row = r0 + rr;
      const bool in_rows = row < end;
      const float gv = in_rows && c0 + cc < L.rows ? gz[row * L.rows + c0 + cc] : 0.f;
      gs[rr][cc] = gv;
      if constexpr (kRounds) gr[rr][cc] = fused_layer_operand<P>(s, l, gv);
      xs[rr][cc] = in_rows && k0 + cc <= L.fan_in
                       ? layer_input<P>(s, x, zs, n, l, row, k0 + cc, L.fan_in)
                       : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kGradStep; ++rr) {
      const float4 a = *reinterpret_cast<const float4*>(&gs[rr][tc]);
      const float4 b = *reinterpret_cast<const float4*>(&xs[rr][tk]);
      const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
      if constexpr (kRounds) {
        const float4 h = *reinterpret_cast<const float4*>(&gr[rr][tc]);
        const float hv[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j)
            acc[i][j] = fmaf(k0 + tk + j == L.fan_in ? av[i] : hv[i], bv[j], acc[i][j]);
      } else {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  float* out = partials + blockIdx.z * numel + L.weight;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int c = c0 + tc + i, k = k0 + tk + j;
      if (c >= L.rows || k > L.fan_in) continue;
      // The weight (rows, fan_in), then the bias (rows).
      out[k < L.fan_in ? static_cast<int64_t>(c) * L.fan_in + k
                       : static_cast<int64_t>(L.rows) * L.fan_in + c] = acc[i][j];
    }
}

int64_t smem_bytes(int64_t floats) {
  return floats * static_cast<int64_t>(sizeof(float));
}

// Dynamic shared memory above 48 KiB has to be opted into per kernel.
template <typename Kernel>
void allow_smem(Kernel kernel, int64_t bytes, const char* where) {
  if (bytes > 48 * 1024)
    check_cuda(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(bytes)),
               where);
}

constexpr int kMaxDevices = 64;

unsigned blocks_of(int64_t n, int rows) {
  return static_cast<unsigned>((n + rows - 1) / rows);
}

// run(std::integral_constant<int, P>) for the shape's operand type.
template <typename Run>
void with_operands(const FusedMlpShape& s, const char* where, Run&& run) {
  switch (s.operands) {
    case kFusedF32:
      return run(std::integral_constant<int, kFusedF32>{});
    case kFusedF16:
      return run(std::integral_constant<int, kFusedF16>{});
    case kFusedBf16:
      return run(std::integral_constant<int, kFusedBf16>{});
    default:
      throw fk::Error(where, "operands f32 (0), f16 (1) or bf16 (2)", fk::to_text(s.operands));
  }
}

}  // namespace

int fused_mlp_block_rows(const FusedMlpShape& s, int device) {
  // The device's opt-in limit, asked once per device (every forward asks).
  static std::atomic<int> known[kMaxDevices] = {};
  const bool cache = device >= 0 && device < kMaxDevices;
  int limit = cache ? known[device].load(std::memory_order_relaxed) : 0;
  if (limit == 0) {
    check_cuda(cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "nefi::cuda::fused_mlp_block_rows");
    if (cache) known[device].store(limit, std::memory_order_relaxed);
  }
  for (int rows : {64, 32}) {
    const Geometry g = geometry(s, rows);
    if (smem_bytes(g.forward_floats) <= limit && smem_bytes(g.backward_floats) <= limit)
      return rows;
  }
  return 0;
}

void launch_fused_mlp_forward(const FusedMlpShape& s, const float* x, const float* params,
                              int64_t n, int block_rows, float* zs, float* y, void* stream) {
  if (n == 0) return;
  constexpr const char* kName = "nefi::cuda::launch_fused_mlp_forward";
  const int64_t bytes = smem_bytes(geometry(s, block_rows).forward_floats);
  with_operands(s, kName, [&](auto p) {
    allow_smem(fused_forward_kernel<p()>, bytes, kName);
    fused_forward_kernel<p()>
        <<<blocks_of(n, block_rows), kFusedThreads, bytes, as_stream(stream)>>>(s, x, params, n,
                                                                                block_rows, zs, y);
  });
  check_launch(kName);
}

void launch_fused_mlp_backward(const FusedMlpShape& s, const float* params, const float* zs,
                               const float* g, int64_t n, int block_rows, float* gzs, float* dx,
                               void* stream) {
  if (n == 0) return;
  constexpr const char* kName = "nefi::cuda::launch_fused_mlp_backward";
  const int64_t bytes = smem_bytes(geometry(s, block_rows).backward_floats);
  with_operands(s, kName, [&](auto p) {
    allow_smem(fused_backward_kernel<p()>, bytes, kName);
    fused_backward_kernel<p()>
        <<<blocks_of(n, block_rows), kFusedThreads, bytes, as_stream(stream)>>>(
            s, params, zs, g, n, block_rows, gzs, dx);
  });
  check_launch(kName);
}

void launch_fused_mlp_param_partials(const FusedMlpShape& s, const float* x, const float* zs,
                                     const float* gzs, const float* g, int64_t n, float* partials,
                                     void* stream) {
  const int64_t chunks = fused_mlp_grad_chunks(n);
  const int64_t chunk_rows = fused_mlp_chunk_rows(n);
  int tiles = 0;
  for (int l = 0; l <= s.depth; ++l) {
    const FusedLayer L = fused_mlp_layer(s, l);
    const int t = (L.rows + kGradTile - 1) / kGradTile * ((L.fan_in + kGradTile) / kGradTile);
    tiles = max_of(tiles, t);
  }
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(s.depth + 1),
                  static_cast<unsigned>(chunks));
  constexpr const char* kName = "nefi::cuda::launch_fused_mlp_param_partials";
  with_operands(s, kName, [&](auto p) {
    fused_param_partials_kernel<p()><<<grid, kFusedThreads, 0, as_stream(stream)>>>(
        s, x, zs, gzs, g, n, chunk_rows, fused_mlp_numel(s), partials);
  });
  check_launch(kName);
}

}  // namespace nefi::cuda
