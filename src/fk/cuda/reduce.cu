// Row reductions, arg-reductions and softmax over the last contiguous dim of an
// [outer, inner] array. Deterministic by construction: the block size is a
// function of `inner` only, thread t accumulates elements t, t + T, t + 2T, ...
// in order, and the block combines its T partials with a fixed shared-memory
// tree. Rows longer than kChunk are cut into fixed kChunk pieces (pass 1 writes
// one partial per piece, pass 2 reduces the partials the same way), so the
// grouping never depends on the GPU's SM count.
//
// Bandwidth: a long row must give every SM several blocks, and every thread
// several loads in flight. With 64k-element pieces a 2^24 sum was 256 blocks
// of one dependent load per thread at a time, 0.17 of the copy bandwidth on an
// H200; 16k pieces make 1024 blocks, and each thread issues four loads before
// it adds them (in the same order as one at a time, so the sums are those of
// the plain loop).
#include <cmath>
#include <type_traits>

#include "fk/cuda/common.cuh"
#include "fk/ops/unary_formulas.h"

namespace fk::cuda {
namespace {
using namespace detail;
namespace math = unary_formulas::math;

constexpr int64_t kChunk = 16384;

int threads_for(int64_t inner) {
  int t = 32;
  while (t < inner && t < kThreads) t *= 2;
  return t;
}

unsigned rows_grid(int64_t rows) {
  return static_cast<unsigned>(rows < (int64_t{1} << 20) ? rows : (int64_t{1} << 20));
}

template <typename T>
inline constexpr bool kIsCx = false;
template <typename R>
inline constexpr bool kIsCx<Cx<R>> = true;

// Identity and combine of each op in accumulator type A.
template <typename A>
__device__ A identity(int op) {
  if constexpr (kIsCx<A>) {
    return A{op == kReduceProd ? 1.0 : 0.0, 0.0};
  } else {
    switch (op) {
      case kReduceSum:
        return A(0);
      case kReduceProd:
        return A(1);
      case kReduceMax:
        if constexpr (std::is_floating_point_v<A>)
          return -INFINITY;
        else
          return std::is_same_v<A, int32_t> ? A(INT32_MIN) : A(INT64_MIN);
      default:
        if constexpr (std::is_floating_point_v<A>)
          return INFINITY;
        else
          return std::is_same_v<A, int32_t> ? A(INT32_MAX) : A(INT64_MAX);
    }
  }
}

template <typename A>
__device__ A combine(int op, A x, A y) {
  if constexpr (kIsCx<A>) {
    return op == kReduceProd ? x * y : x + y;
  } else {
    switch (op) {
      case kReduceSum:
        return x + y;
      case kReduceProd:
        return x * y;
      case kReduceMax:
        return (x != x || x > y) ? x : y;  // NaN propagates
      default:
        return (x != x || x < y) ? x : y;
    }
  }
}

template <typename A, typename T>
__device__ A to_acc(T v) {
  if constexpr (kIsCx<T>) {
    return A{v.re, v.im};
  } else {
    return static_cast<A>(Num<T>::load(v));
  }
}

template <typename O, typename A>
__device__ O from_acc(A v) {
  if constexpr (kIsCx<O>) {
    return O{static_cast<decltype(O{}.re)>(v.re), static_cast<decltype(O{}.re)>(v.im)};
  } else if constexpr (std::is_same_v<O, __half> || std::is_same_v<O, __nv_bfloat16>) {
    return Num<O>::store(static_cast<float>(v));
  } else {
    return static_cast<O>(v);
  }
}

// Reduces `v` over the block with a fixed tree; every thread gets the result.
template <typename A>
__device__ A block_combine(int op, A v, A* s) {
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] = combine(op, s[t], s[t + stride]);
    __syncthreads();
  }
  A r = s[0];
  __syncthreads();
  return r;
}

// Rows of length `len` (the last piece of a chunked row may be shorter):
// `pieces` pieces per row of `row_len` elements; output r = row * pieces + piece.
template <typename T, typename A, typename O>
__global__ void reduce_kernel(int op, const T* in, O* out, int64_t rows, int64_t row_len,
                              int64_t pieces) {
  extern __shared__ __align__(16) unsigned char smem[];
  A* s = reinterpret_cast<A*>(smem);
  for (int64_t r = blockIdx.x; r < rows * pieces; r += gridDim.x) {
    const int64_t row = r / pieces, piece = r % pieces;
    const int64_t begin = piece * kChunk;
    const int64_t rest = row_len - begin;
    const int64_t len = pieces == 1 ? row_len : (rest < kChunk ? rest : kChunk);
    const T* p = in + row * row_len + begin;
    A acc = identity<A>(op);
    const int64_t step = blockDim.x;
    int64_t i = threadIdx.x;
    for (; i + 3 * step < len; i += 4 * step) {
      const T v0 = p[i], v1 = p[i + step], v2 = p[i + 2 * step], v3 = p[i + 3 * step];
      acc = combine(op, acc, to_acc<A>(v0));
      acc = combine(op, acc, to_acc<A>(v1));
      acc = combine(op, acc, to_acc<A>(v2));
      acc = combine(op, acc, to_acc<A>(v3));
    }
    for (; i < len; i += step) acc = combine(op, acc, to_acc<A>(p[i]));
    acc = block_combine(op, acc, s);
    if (threadIdx.x == 0) out[r] = from_acc<O>(acc);
  }
}

template <typename T, typename A, typename O>
void reduce_rows(int op, const T* in, O* out, int64_t outer, int64_t inner, cudaStream_t s) {
  const char* where = "cuda::launch_reduce_lastdim";
  if (inner <= kChunk) {
    const int threads = threads_for(inner);
    reduce_kernel<T, A, O>
        <<<rows_grid(outer), threads, threads * sizeof(A), s>>>(op, in, out, outer, inner, 1);
    check_launch(where);
    return;
  }
  const int64_t pieces = (inner + kChunk - 1) / kChunk;
  A* partial = nullptr;
  check_cuda(cudaMallocAsync(reinterpret_cast<void**>(&partial),
                             static_cast<size_t>(outer * pieces) * sizeof(A), s),
             where);
  reduce_kernel<T, A, A><<<rows_grid(outer * pieces), kThreads, kThreads * sizeof(A), s>>>(
      op, in, partial, outer, inner, pieces);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) {
    const int threads = threads_for(pieces);
    reduce_kernel<A, A, O>
        <<<rows_grid(outer), threads, threads * sizeof(A), s>>>(op, partial, out, outer, pieces, 1);
    e = cudaGetLastError();
  }
  cudaFreeAsync(partial, s);
  check_cuda(e, where);
}

// --- arg-reductions ---------------------------------------------------------

// (value, index) of the better candidate: NaN first, then larger (smaller)
// value, then smaller index.
template <typename A>
__device__ bool better(bool is_max, A v1, int64_t i1, A v2, int64_t i2) {
  bool n1 = v1 != v1, n2 = v2 != v2;
  if (n1 || n2) return n1 && (!n2 || i1 < i2);
  if (v1 == v2) return i1 < i2;
  return is_max ? v1 > v2 : v1 < v2;
}

template <typename T, typename A>
__global__ void argreduce_kernel(bool is_max, const T* in, int64_t* out, int64_t outer,
                                 int64_t inner) {
  extern __shared__ __align__(16) unsigned char smem[];
  A* sv = reinterpret_cast<A*>(smem);
  int64_t* si = reinterpret_cast<int64_t*>(sv + blockDim.x);
  const int t = threadIdx.x;
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const T* p = in + row * inner;
    A best = A(0);
    int64_t bi = -1;
    for (int64_t i = t; i < inner; i += blockDim.x) {
      A v = to_acc<A>(p[i]);
      if (bi < 0 || better(is_max, v, i, best, bi)) {
        best = v;
        bi = i;
      }
    }
    sv[t] = best;
    si[t] = bi;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
      if (t < stride && si[t + stride] >= 0 &&
          (si[t] < 0 || better(is_max, sv[t + stride], si[t + stride], sv[t], si[t]))) {
        sv[t] = sv[t + stride];
        si[t] = si[t + stride];
      }
      __syncthreads();
    }
    if (t == 0) out[row] = si[0];
    __syncthreads();
  }
}

// --- softmax ----------------------------------------------------------------

template <typename T, typename C>
__global__ void softmax_kernel(const T* in, T* out, int64_t outer, int64_t inner, bool log) {
  extern __shared__ __align__(16) unsigned char smem[];
  C* s = reinterpret_cast<C*>(smem);
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const T* p = in + row * inner;
    T* q = out + row * inner;
    C m = -INFINITY;
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      m = combine(kReduceMax, m, Num<T>::load(p[i]));
    }
    m = block_combine(kReduceMax, m, s);
    // As the CPU: an all -inf row shifts by 0 (its softmax is NaN); a +inf
    // or NaN max keeps its shift, making the whole row NaN, as torch's.
    if (m == C(-INFINITY)) m = C(0);
    C sum = 0;
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      sum += math::exp(Num<T>::load(p[i]) - m);
    }
    sum = block_combine(kReduceSum, sum, s);
    const C lse = math::log(sum);
    const C inv = C(1) / sum;
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      C z = Num<T>::load(p[i]) - m;
      q[i] = Num<T>::store(log ? z - lse : math::exp(z) * inv);
    }
  }
}

template <typename T, typename C>
__global__ void softmax_backward_kernel(const T* grad, const T* y, T* gin, int64_t outer,
                                        int64_t inner, bool log) {
  extern __shared__ __align__(16) unsigned char smem[];
  C* s = reinterpret_cast<C*>(smem);
  for (int64_t row = blockIdx.x; row < outer; row += gridDim.x) {
    const T* g = grad + row * inner;
    const T* yr = y + row * inner;
    T* o = gin + row * inner;
    C dot = 0;  // softmax: sum g y; log-softmax: sum g
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      C gv = Num<T>::load(g[i]);
      dot += log ? gv : gv * Num<T>::load(yr[i]);
    }
    dot = block_combine(kReduceSum, dot, s);
    for (int64_t i = threadIdx.x; i < inner; i += blockDim.x) {
      C gv = Num<T>::load(g[i]), yv = Num<T>::load(yr[i]);
      o[i] = Num<T>::store(log ? gv - math::exp(yv) * dot : yv * (gv - dot));
    }
  }
}

template <typename T>
using SoftmaxCompute = std::conditional_t<std::is_same_v<T, double>, double, float>;

void check_rows(int64_t outer, int64_t inner, const char* where) {
  FK_CHECK(outer >= 0 && inner >= 0, where, "non-negative sizes",
           fk::to_text(outer) + " x " + fk::to_text(inner));
}

}  // namespace

int reduce_out_dtype(int op, int dtype) {
  const bool integral = dtype == kBool || dtype == kI32 || dtype == kI64;
  return integral && (op == kReduceSum || op == kReduceProd) ? kI64 : dtype;
}

void launch_reduce_lastdim(int op, int dtype, const void* in, void* out, int64_t outer,
                           int64_t inner, void* stream) {
  const char* where = "cuda::launch_reduce_lastdim";
  FK_CHECK(op >= kReduceSum && op <= kReduceMin, where, "a reduce op code 0..3", fk::to_text(op));
  check_rows(outer, inner, where);
  if (outer == 0) return;
  const bool arith = op == kReduceSum || op == kReduceProd;
  cudaStream_t s = as_stream(stream);
  auto run = [&](auto tin, auto tacc, auto tout) {
    using T = typename decltype(tin)::type;
    using A = typename decltype(tacc)::type;
    using O = typename decltype(tout)::type;
    reduce_rows<T, A, O>(op, static_cast<const T*>(in), static_cast<O*>(out), outer, inner, s);
  };
  switch (dtype) {
    case kF32:
      return run(Tag<float>{}, Tag<double>{}, Tag<float>{});
    case kF64:
      return run(Tag<double>{}, Tag<double>{}, Tag<double>{});
    case kF16:
      return run(Tag<__half>{}, Tag<double>{}, Tag<__half>{});
    case kBF16:
      return run(Tag<__nv_bfloat16>{}, Tag<double>{}, Tag<__nv_bfloat16>{});
    case kBool:
      if (arith) return run(Tag<bool>{}, Tag<int64_t>{}, Tag<int64_t>{});
      return run(Tag<bool>{}, Tag<int32_t>{}, Tag<bool>{});
    case kI32:
      if (arith) return run(Tag<int32_t>{}, Tag<int64_t>{}, Tag<int64_t>{});
      return run(Tag<int32_t>{}, Tag<int32_t>{}, Tag<int32_t>{});
    case kI64:
      return run(Tag<int64_t>{}, Tag<int64_t>{}, Tag<int64_t>{});
    case kC64:
    case kC128:
      FK_CHECK(arith, where, "sum or prod for complex dtypes", dtype_name(dtype));
      if (dtype == kC64) return run(Tag<Cx<float>>{}, Tag<Cx<double>>{}, Tag<Cx<float>>{});
      return run(Tag<Cx<double>>{}, Tag<Cx<double>>{}, Tag<Cx<double>>{});
    default:
      unsupported(where, "a numeric dtype", dtype);
  }
}

void launch_argreduce_lastdim(bool is_max, int dtype, const void* in, int64_t* out, int64_t outer,
                              int64_t inner, void* stream) {
  const char* where = "cuda::launch_argreduce_lastdim";
  check_rows(outer, inner, where);
  FK_CHECK(inner > 0 || outer == 0, where, "a non-empty reduced dimension", "size 0");
  if (outer == 0) return;
  const int threads = threads_for(inner);
  auto run = [&](auto tin, auto tacc) {
    using T = typename decltype(tin)::type;
    using A = typename decltype(tacc)::type;
    argreduce_kernel<T, A>
        <<<rows_grid(outer), threads, threads*(sizeof(A) + sizeof(int64_t)), as_stream(stream)>>>(
            is_max, static_cast<const T*>(in), out, outer, inner);
  };
  switch (dtype) {
    case kF32:
      run(Tag<float>{}, Tag<float>{});
      break;
    case kF64:
      run(Tag<double>{}, Tag<double>{});
      break;
    case kF16:
      run(Tag<__half>{}, Tag<float>{});
      break;
    case kBF16:
      run(Tag<__nv_bfloat16>{}, Tag<float>{});
      break;
    case kBool:  // as the CPU: false < true, so the first true (max) or false (min)
      run(Tag<bool>{}, Tag<int32_t>{});
      break;
    case kI32:
      run(Tag<int32_t>{}, Tag<int64_t>{});
      break;
    case kI64:
      run(Tag<int64_t>{}, Tag<int64_t>{});
      break;
    default:
      unsupported(where, "a real dtype (f32 f64 f16 bf16 i32 i64 bool)", dtype);
  }
  check_launch(where);
}

void launch_softmax_lastdim(int dtype, const void* in, void* out, int64_t outer, int64_t inner,
                            bool log, void* stream) {
  const char* where = "cuda::launch_softmax_lastdim";
  check_rows(outer, inner, where);
  if (outer == 0 || inner == 0) return;
  const int threads = threads_for(inner);
  visit_floating(dtype, where, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = SoftmaxCompute<T>;
    softmax_kernel<T, C><<<rows_grid(outer), threads, threads * sizeof(C), as_stream(stream)>>>(
        static_cast<const T*>(in), static_cast<T*>(out), outer, inner, log);
  });
  check_launch(where);
}

void launch_softmax_backward_lastdim(int dtype, const void* grad, const void* out, void* grad_in,
                                     int64_t outer, int64_t inner, bool log, void* stream) {
  const char* where = "cuda::launch_softmax_backward_lastdim";
  check_rows(outer, inner, where);
  if (outer == 0 || inner == 0) return;
  const int threads = threads_for(inner);
  visit_floating(dtype, where, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = SoftmaxCompute<T>;
    softmax_backward_kernel<T, C>
        <<<rows_grid(outer), threads, threads * sizeof(C), as_stream(stream)>>>(
            static_cast<const T*>(grad), static_cast<const T*>(out), static_cast<T*>(grad_in),
            outer, inner, log);
  });
  check_launch(where);
}

}  // namespace fk::cuda
