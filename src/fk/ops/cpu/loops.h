#pragma once
// The CPU elementwise engine: iterate K operands of one shape with arbitrary
// (broadcast, transposed, sliced) strides. Dimensions are reordered innermost
// first, size-1 dimensions dropped and mergeable neighbours coalesced, so a
// contiguous tensor of any rank is one flat loop that the compiler vectorises.
// Work above kElementwiseGrain elements is split over fk's threads by index.
#include <array>
#include <cstdint>

#include "fk/parallel.h"
#include "fk/profile.h"
#include "fk/tensor.h"

namespace fk::cpu {

inline constexpr int64_t kElementwiseGrain = 32768;

// For ops with CPU kernels only: a clear error for tensors on other devices.
inline void check_cpu(const Tensor& t, const char* op) {
  FK_CHECK(t.device().is_cpu(), op,
           std::string("a CPU tensor (CUDA kernels for ") + op + " are not built yet)",
           t.device().str());
}

template <int K>
struct Loop {
  int ndim = 0;
  int64_t shape[kMaxDims];
  int64_t strides[K][kMaxDims];  // bytes, innermost first
  char* base[K];
  int64_t numel = 1;
};

// operands[i] must have `shape` after broadcasting; pass it expanded.
template <int K>
Loop<K> make_loop(const Dims& shape, const std::array<const Tensor*, K>& operands) {
  Loop<K> L;
  for (int k = 0; k < K; ++k) L.base[k] = static_cast<char*>(operands[k]->data_ptr());
  for (int d = shape.size() - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    int64_t st[K];
    for (int k = 0; k < K; ++k) {
      const Tensor& t = *operands[k];
      int td = t.dim() - (shape.size() - d);
      st[k] = (td >= 0 && t.shape()[td] != 1) ? t.strides()[td] * static_cast<int64_t>(t.itemsize())
                                              : 0;
    }
    bool merge = L.ndim > 0;
    for (int k = 0; k < K && merge; ++k) {
      merge = st[k] == L.strides[k][L.ndim - 1] * L.shape[L.ndim - 1];
    }
    if (merge) {
      L.shape[L.ndim - 1] *= shape[d];
    } else {
      for (int k = 0; k < K; ++k) L.strides[k][L.ndim] = st[k];
      L.shape[L.ndim++] = shape[d];
    }
  }
  L.numel = shape.numel();
  if (L.ndim == 0) {  // a single element (or empty)
    L.shape[0] = L.numel > 0 ? 1 : 0;
    for (int k = 0; k < K; ++k) L.strides[k][0] = 0;
    L.ndim = 1;
  }
  return L;
}

// Calls inner(ptrs, strides, n) for runs along the innermost dimension covering
// linear indices [begin, end).
template <int K, typename F>
void run_range(const Loop<K>& L, int64_t begin, int64_t end, const F& inner) {
  int64_t idx[kMaxDims] = {};
  int64_t rem = begin;
  for (int d = 0; d < L.ndim; ++d) {
    idx[d] = rem % L.shape[d];
    rem /= L.shape[d];
  }
  char* ptr[K];
  for (int k = 0; k < K; ++k) {
    ptr[k] = L.base[k];
    for (int d = 0; d < L.ndim; ++d) ptr[k] += idx[d] * L.strides[k][d];
  }
  int64_t inner_stride[K];
  for (int k = 0; k < K; ++k) inner_stride[k] = L.strides[k][0];
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = std::min(L.shape[0] - idx[0], end - pos);
    inner(ptr, inner_stride, n);
    pos += n;
    for (int k = 0; k < K; ++k) ptr[k] += n * inner_stride[k];
    idx[0] += n;
    for (int d = 0; d + 1 < L.ndim && idx[d] == L.shape[d]; ++d) {
      for (int k = 0; k < K; ++k) ptr[k] += L.strides[k][d + 1] - L.shape[d] * L.strides[k][d];
      idx[d] = 0;
      ++idx[d + 1];
    }
  }
}

template <int K, typename F>
void run(const Loop<K>& L, const F& inner) {
  if (L.numel == 0) return;
  parallel_for(0, L.numel, kElementwiseGrain,
               [&](int64_t lo, int64_t hi) { run_range(L, lo, hi, inner); });
}

// True when every operand is contiguous with the output's shape (or a single
// element): then the loop is one flat run and the geometry pass is skipped.
inline bool flat_operands(const Tensor& out, std::initializer_list<const Tensor*> ins) {
  if (!out.is_contiguous()) return false;
  for (const Tensor* t : ins) {
    if (!(t->numel() == 1 || (t->shape() == out.shape() && t->is_contiguous()))) return false;
  }
  return true;
}

// Small flat work: call the inner loop directly, no geometry, no threads.
template <int K, typename F>
bool run_small_flat(const Tensor& out, const std::array<const Tensor*, K>& ops, const F& inner) {
  int64_t n = out.numel();
  if (n > kElementwiseGrain) return false;
  char* p[K];
  int64_t s[K];
  for (int k = 0; k < K; ++k) {
    p[k] = static_cast<char*>(ops[k]->data_ptr());
    s[k] = ops[k]->numel() == 1 && n != 1 ? 0 : static_cast<int64_t>(ops[k]->itemsize());
  }
  if (n > 0) inner(p, s, n);
  return true;
}

// out[i] = f(in[i]) over tensors of the same shape (`in` may be broadcast).
template <typename O, typename I, typename F>
void map1(Tensor& out, const Tensor& in, const F& f) {
  auto inner = [&](char** p, const int64_t* s, int64_t n) {
    O* o = reinterpret_cast<O*>(p[0]);
    const I* a = reinterpret_cast<const I*>(p[1]);
    if (s[0] == sizeof(O) && s[1] == sizeof(I)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(a[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const I*>(p[1] + i * s[1]));
      }
    }
  };
  if (flat_operands(out, {&in}) && run_small_flat<2>(out, {&out, &in}, inner)) return;
  run(make_loop<2>(out.shape(), {&out, &in}), inner);
}

// out[i] = f(a[i], b[i]); a and b broadcast to out's shape.
template <typename O, typename A, typename B, typename F>
void map2(Tensor& out, const Tensor& a, const Tensor& b, const F& f) {
  auto inner = [&](char** p, const int64_t* s, int64_t n) {
    O* o = reinterpret_cast<O*>(p[0]);
    const A* x = reinterpret_cast<const A*>(p[1]);
    const B* y = reinterpret_cast<const B*>(p[2]);
    if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == sizeof(B)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == 0) {
      const B yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (s[0] == sizeof(O) && s[1] == 0 && s[2] == sizeof(B)) {
      const A xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const A*>(p[1] + i * s[1]),
                                                   *reinterpret_cast<const B*>(p[2] + i * s[2]));
      }
    }
  };
  if (flat_operands(out, {&a, &b}) && run_small_flat<3>(out, {&out, &a, &b}, inner)) return;
  run(make_loop<3>(out.shape(), {&out, &a, &b}), inner);
}

// Points at `p` if it steps by one element (stride sizeof(T)), or at `buf`
// filled with the one value *p if it is broadcast along the run (stride 0);
// *step is then 1 or 0 elements per chunk element. Null for any other stride.
template <typename T, int64_t kChunk>
const T* unit_or_splat(const char* p, int64_t stride, T (&buf)[kChunk], int64_t* step) {
  *step = stride == 0 ? 0 : 1;
  if (stride == static_cast<int64_t>(sizeof(T))) return reinterpret_cast<const T*>(p);
  if (stride != 0) return nullptr;
  const T v = *reinterpret_cast<const T*>(p);
  for (int64_t i = 0; i < kChunk; ++i) buf[i] = v;
  return buf;
}

// out[i] = f(a[i], b[i], c[i]); all broadcast to out's shape.
template <typename O, typename A, typename B, typename C, typename F>
void map3(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, const F& f) {
  auto inner = [&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(O) && s[1] == sizeof(A) && s[2] == sizeof(B) && s[3] == sizeof(C)) {
      // Unit strides: a plain indexed loop the compiler vectorises.
      O* o = reinterpret_cast<O*>(p[0]);
      const A* x = reinterpret_cast<const A*>(p[1]);
      const B* y = reinterpret_cast<const B*>(p[2]);
      const C* z = reinterpret_cast<const C*>(p[3]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i], z[i]);
      return;
    }
    if (s[0] == sizeof(O) && n >= 16) {
      // Unit or broadcast (scalar) inputs, e.g. lerp's weight or where's zero:
      // each broadcast input is splatted into a buffer once, so every chunk
      // runs the same vectorised unit-stride loop instead of the byte-offset
      // one below (~8x slower).
      constexpr int64_t kChunk = 256;
      A xb[kChunk];
      B yb[kChunk];
      C zb[kChunk];
      int64_t xs, ys, zs;
      const A* x = unit_or_splat(p[1], s[1], xb, &xs);
      const B* y = unit_or_splat(p[2], s[2], yb, &ys);
      const C* z = unit_or_splat(p[3], s[3], zb, &zs);
      if (x && y && z) {
        O* o = reinterpret_cast<O*>(p[0]);
        for (int64_t j = 0; j < n; j += kChunk) {
          const int64_t m = std::min(kChunk, n - j);
          O* oj = o + j;
          const A* xj = x + xs * j;
          const B* yj = y + ys * j;
          const C* zj = z + zs * j;
          for (int64_t i = 0; i < m; ++i) oj[i] = f(xj[i], yj[i], zj[i]);
        }
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      *reinterpret_cast<O*>(p[0] + i * s[0]) = f(*reinterpret_cast<const A*>(p[1] + i * s[1]),
                                                 *reinterpret_cast<const B*>(p[2] + i * s[2]),
                                                 *reinterpret_cast<const C*>(p[3] + i * s[3]));
    }
  };
  if (flat_operands(out, {&a, &b, &c}) && run_small_flat<4>(out, {&out, &a, &b, &c}, inner)) return;
  run(make_loop<4>(out.shape(), {&out, &a, &b, &c}), inner);
}

}  // namespace fk::cpu
