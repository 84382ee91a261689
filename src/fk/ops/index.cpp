#include "fk/ops/index.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/copy_bytes.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {
namespace {

using cpu::Bytes16;
using cpu::visit_width;

std::string bounds(int64_t bound, int dim) {
  return "indices in [0, " + std::to_string(bound) + ") along dim " + std::to_string(dim) +
         " (negative indices are not wrapped)";
}

// `what` (an index, mask or source) must live on t's device.
void check_device(const Tensor& t, const Tensor& other, const char* op, const char* what) {
  FK_CHECK(other.device() == t.device(), op, std::string(what) + " on " + t.device().str(),
           std::string(what) + " on " + other.device().str());
}

// CUDA: the index as a contiguous i64 tensor on `t`'s device, its range
// checked before any kernel writes (two device reductions and one host read
// of their results: out-of-range indices throw here, as on the CPU, not
// inside a kernel).
Tensor checked_index_cuda(const Tensor& t, const Tensor& index, int64_t bound, int dim,
                          const char* op) {
  check_device(t, index, op, "an index");
  Tensor idx = index.to(DType::I64).contiguous();
  if (idx.numel() == 0) return idx;
  const std::vector<int64_t> range = stack({amin(idx), amax(idx)}, 0).to_vector<int64_t>();
  if (range[0] < 0) throw Error(op, bounds(bound, dim), "index " + std::to_string(range[0]));
  if (range[1] >= bound) throw Error(op, bounds(bound, dim), "index " + std::to_string(range[1]));
  return idx;
}

// The index as a contiguous i64 tensor on t's device, every value checked
// against [0, bound).
Tensor checked_index(const Tensor& t, const Tensor& index, int64_t bound, int dim, const char* op) {
  FK_CHECK(index.dtype() == DType::I32 || index.dtype() == DType::I64, op,
           "an i32 or i64 index tensor", std::string("an index of dtype ") + name(index.dtype()));
  if (t.device().is_cuda()) return checked_index_cuda(t, index, bound, dim, op);
  check_device(t, index, op, "an index");
  Tensor idx = index.to(DType::I64).contiguous();
  const int64_t* p = idx.data<int64_t>();
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    if (p[i] < 0 || p[i] >= bound) [[unlikely]] {
      throw Error(op, bounds(bound, dim),
                  "index " + std::to_string(p[i]) + " at flat position " + std::to_string(i));
    }
  }
  return idx;
}

void check_broadcasts_to(const Tensor& t, const Dims& shape, const char* op, const char* what) {
  Dims b = broadcast_shapes(t.shape(), shape, op);
  FK_CHECK(b == shape, op, std::string(what) + " broadcastable to " + shape.str(), t.shape().str());
}

void check_inplace(const Tensor& self, const Tensor& other, const char* op) {
  FK_CHECK(
      !autograd::needs_grad(self, other), op,
      "operands that do not require grad, or grad mode off (in-place ops are not "
      "recorded by autograd; use the out-of-place op)",
      autograd::tensor_requires_grad(self) ? "self requiring grad" : "the source requiring grad");
}

// Reduces a gradient to an input's shape and dtype (real part for real inputs).
Tensor grad_for(const Tensor& g, const Dims& shape, DType dtype) {
  Tensor r = autograd::sum_to(g, shape);
  if (is_complex(r.dtype()) && !is_complex(dtype)) r = r.real();
  return r.dtype() == dtype ? r : r.to(dtype);
}

// A copy of `self` in dtype `ct` (contiguous), the buffer scatter/index add write.
Tensor accumulator_copy(const Tensor& self, DType ct) {
  Tensor out = empty(self.shape(), {ct, self.device()});
  out.copy_(self);
  return out;
}

// --- index_select -----------------------------------------------------------

Tensor index_select_forward(const Tensor& t, int64_t dim, const Tensor& index) {
  FK_CHECK(t.dim() >= 1, "index_select", "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() <= 1, "index_select", "a 1-D index",
           "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, t.dim(), "index_select");
  Tensor idx = checked_index(t, index, t.size(d), d, "index_select");
  const int64_t k = idx.numel(), n = t.size(d);
  Dims shape = t.shape();
  shape[d] = k;
  Tensor out = empty(shape, {t.dtype(), t.device()});
  if (out.numel() == 0) return out;
  Tensor src = t.contiguous();
  const int64_t outer = numel_between(shape, 0, d),
                inner = numel_between(shape, d + 1, shape.size());
  if (t.device().is_cuda()) {
    cuda::launch_index_select(static_cast<int>(t.dtype()), src.data_ptr(), idx.data<int64_t>(),
                              out.data_ptr(), outer, n, inner, k, {}, cuda_ops::stream_of(t));
    cuda_ops::launched(t);
    return out;
  }
  const int64_t rows = outer * k;
  const int64_t* ip = idx.data<int64_t>();
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / inner);
  if (rows > grain && get_num_threads() > 1) profile::count_launch();
  visit_width(t.itemsize(), [&](auto tag) {
    using W = typename decltype(tag)::type;
    const W* s = static_cast<const W*>(src.data_ptr());
    W* o = static_cast<W*>(out.data_ptr());
    parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t r = lo; r < hi; ++r) {
        const W* from = s + ((r / k) * n + ip[r % k]) * inner;
        if (inner == 1) {
          o[r] = *from;
        } else {
          // Rows may start at any offset from each other: copy_bytes keeps
          // misaligned long rows at copy speed where memcpy slows ~14x.
          cpu::copy_bytes(o + r * inner, from, inner * static_cast<int64_t>(sizeof(W)));
        }
      }
    });
  });
  return out;
}

// --- gather -------------------------------------------------------------------

// The shape gather's output takes: the index's, with t's sizes broadcast in.
Dims gather_shape(const Tensor& t, int d, const Tensor& index) {
  Dims out = index.shape();
  for (int i = 0; i < t.dim(); ++i) {
    if (i == d) continue;
    int64_t a = t.size(i), b = index.size(i);
    FK_CHECK(a == b || a == 1 || b == 1, "gather",
             "index sizes equal to the input's (or 1) outside dim " + std::to_string(d),
             "input " + t.shape().str() + " and index " + index.shape().str());
    out[i] = a == 1 ? b : a;
  }
  return out;
}

Tensor gather_forward(const Tensor& t, int64_t dim, const Tensor& index) {
  FK_CHECK(t.dim() >= 1, "gather", "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() == t.dim(), "gather",
           "an index with the input's rank " + std::to_string(t.dim()),
           "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, t.dim(), "gather");
  Dims shape = gather_shape(t, d, index);
  Tensor idx = checked_index(t, index, t.size(d), d, "gather").expand(shape);
  Tensor out = empty(shape, {t.dtype(), t.device()});
  if (out.numel() == 0) return out;
  if (t.device().is_cuda()) {
    // t's own strides, 0 along the dims it is broadcast over.
    Dims in_strides = t.strides();
    for (int i = 0; i < t.dim(); ++i) {
      if (i != d && t.size(i) == 1) in_strides[i] = 0;
    }
    cuda::launch_gather(static_cast<int>(t.dtype()), t.data_ptr(), in_strides.data(), t.size(d),
                        idx.data<int64_t>(), idx.strides().data(), out.data_ptr(), nullptr,
                        shape.size(), shape.data(), d, {}, cuda_ops::stream_of(t));
    cuda_ops::launched(t);
    return out;
  }
  // t seen with stride 0 along d: each element's address is then the fiber base
  // plus index * stride(d), so the elementwise engine walks all three operands.
  Dims strides = t.strides();
  for (int i = 0; i < t.dim(); ++i) {
    if (i == d || t.size(i) == 1) strides[i] = 0;
  }
  Tensor tv = make_tensor(t.storage(), t.dtype(), shape, strides, t.offset());
  const int64_t step = t.stride(d);
  auto loop = cpu::make_loop<3>(shape, {&out, &idx, &tv});
  visit_width(t.itemsize(), [&](auto tag) {
    using W = typename decltype(tag)::type;
    cpu::run(loop, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t j = *reinterpret_cast<const int64_t*>(p[1] + i * s[1]);
        *reinterpret_cast<W*>(p[0] + i * s[0]) =
            reinterpret_cast<const W*>(p[2] + i * s[2])[j * step];
      }
    });
  });
  return out;
}

// --- scatter_add ----------------------------------------------------------------

// out[.., idx[p], ..] += src[p] over the scatter shape S = idx.shape() (idx and
// src already expanded to it). Threads take whole fibers along d: a fiber is
// the only writer of its output fiber, and adds in ascending order along d.
template <typename T>
void scatter_add_kernel(Tensor& out, int d, const Tensor& idx, const Tensor& src) {
  const Dims& shape = idx.shape();
  const int64_t len = shape[d];
  if (shape.numel() == 0) return;
  Dims fiber = shape;
  fiber[d] = 1;
  Tensor of = make_tensor(out.storage(), out.dtype(), fiber, out.strides(), out.offset());
  Tensor jf = make_tensor(idx.storage(), idx.dtype(), fiber, idx.strides(), idx.offset());
  Tensor sf = make_tensor(src.storage(), src.dtype(), fiber, src.strides(), src.offset());
  const int64_t os = out.stride(d), js = idx.stride(d), ss = src.stride(d);
  auto loop = cpu::make_loop<3>(fiber, {&of, &jf, &sf});
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / len);
  if (loop.numel > grain && get_num_threads() > 1) profile::count_launch();
  parallel_for(0, loop.numel, grain, [&](int64_t lo, int64_t hi) {
    cpu::run_range(loop, lo, hi, [&](char** p, const int64_t* st, int64_t n) {
      for (int64_t f = 0; f < n; ++f) {
        T* o = reinterpret_cast<T*>(p[0] + f * st[0]);
        const int64_t* j = reinterpret_cast<const int64_t*>(p[1] + f * st[1]);
        const T* s = reinterpret_cast<const T*>(p[2] + f * st[2]);
        for (int64_t i = 0; i < len; ++i) o[j[i * js] * os] += s[i * ss];
      }
    });
  });
}

struct ScatterArgs {
  int d;
  Tensor idx;  // i64, expanded to the scatter shape
};

ScatterArgs scatter_args(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         const char* op) {
  check_device(self, src, op, "a source");
  FK_CHECK(self.dim() >= 1, op, "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() == self.dim(), op, "an index with self's rank " + std::to_string(self.dim()),
           "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, self.dim(), op);
  Dims shape = self.shape();
  shape[d] = index.size(d);
  for (int i = 0; i < self.dim(); ++i) {
    FK_CHECK(i == d || index.size(i) == shape[i] || index.size(i) == 1, op,
             "index sizes equal to self's (or 1) outside dim " + std::to_string(d),
             "self " + self.shape().str() + " and index " + index.shape().str());
  }
  check_broadcasts_to(src, shape, op, "a source");
  return {d, checked_index(self, index, self.size(d), d, op).expand(shape)};
}

// Writes self + scatter into `out` (already holding self, dtype ct).
void scatter_into(Tensor& out, const ScatterArgs& a, const Tensor& src) {
  Tensor s = src.to(out.dtype()).expand(a.idx.shape());
  if (out.device().is_cuda()) {
    // The sort-based deterministic mode: each target adds its sources in the
    // CPU's order, so results are bitwise reproducible run to run.
    const Dims& shape = a.idx.shape();
    if (shape.numel() == 0) return;
    cuda::launch_scatter_add(static_cast<int>(out.dtype()), out.data_ptr(), out.strides().data(),
                             out.size(a.d), s.data_ptr(), s.strides().data(), a.idx.data<int64_t>(),
                             a.idx.strides().data(), shape.size(), shape.data(), a.d, true, {},
                             cuda_ops::stream_of(out));
    cuda_ops::launched(out);
    return;
  }
  cpu::visit_numeric(out.dtype(), "scatter_add", [&](auto tag) {
    scatter_add_kernel<typename decltype(tag)::type>(out, a.d, a.idx, s);
  });
}

Tensor scatter_add_forward(const Tensor& self, int64_t dim, const Tensor& index,
                           const Tensor& src) {
  ScatterArgs a = scatter_args(self, dim, index, src, "scatter_add");
  DType rt = promote(self.dtype(), src.dtype());
  Tensor out = accumulator_copy(self, compute_type(rt));
  scatter_into(out, a, src);
  return out.dtype() == rt ? out : out.to(rt);
}

// --- index_add --------------------------------------------------------------------

// out [outer, n, inner] += alpha * src [outer, k, inner] at rows idx[k]. Work
// items are (outer row, column block) pairs owning disjoint outputs; each adds
// its k rows in ascending order.
template <typename T>
void index_add_kernel(T* out, const T* src, const int64_t* idx, int64_t outer, int64_t n, int64_t k,
                      int64_t inner, T alpha) {
  constexpr int64_t kBlock = 2048;
  const int64_t blocks = (inner + kBlock - 1) / kBlock, items = outer * blocks;
  const int64_t work = k * std::min(inner, kBlock);
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(work, 1));
  if (items > grain && get_num_threads() > 1) profile::count_launch();
  parallel_for(0, items, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t it = lo; it < hi; ++it) {
      const int64_t o = it / blocks, c0 = (it % blocks) * kBlock;
      const int64_t c1 = std::min(inner, c0 + kBlock);
      for (int64_t j = 0; j < k; ++j) {
        T* orow = out + (o * n + idx[j]) * inner;
        const T* srow = src + (o * k + j) * inner;
        for (int64_t c = c0; c < c1; ++c) orow[c] += alpha * srow[c];
      }
    }
  });
}

struct IndexAddArgs {
  int d;
  Tensor idx;      // contiguous i64
  Dims src_shape;  // self's shape with the index length at d
};

IndexAddArgs index_add_args(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                            double alpha, const char* op) {
  check_device(self, src, op, "a source");
  FK_CHECK(self.dim() >= 1, op, "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() <= 1, op, "a 1-D index", "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, self.dim(), op);
  Tensor idx = checked_index(self, index, self.size(d), d, op);
  Dims shape = self.shape();
  shape[d] = idx.numel();
  check_broadcasts_to(src, shape, op, "a source");
  DType rt = promote(self.dtype(), src.dtype());
  FK_CHECK(!is_integral(rt) || alpha == static_cast<double>(static_cast<int64_t>(alpha)), op,
           "an integer alpha for integer tensors", std::to_string(alpha));
  return {d, idx, shape};
}

// out (contiguous, holding self) += alpha * src at the index rows.
void index_add_into(Tensor& out, const IndexAddArgs& a, const Tensor& src, double alpha) {
  Tensor s = src.to(out.dtype()).expand(a.src_shape).contiguous();
  const Dims& shape = out.shape();
  const int64_t outer = numel_between(shape, 0, a.d),
                inner = numel_between(shape, a.d + 1, shape.size());
  if (s.numel() == 0) return;
  if (out.device().is_cuda()) {
    // A scatter_add over [outer, k, inner] with the index broadcast along the
    // outer and inner dims (out is contiguous [outer, n, inner]).
    // alpha in out's dtype times src, as the CPU kernel computes it.
    if (alpha != 1.0) s = mul(s, full(Dims{}, alpha, {out.dtype(), out.device()}));
    const int64_t n = shape[a.d], k = a.idx.numel();
    const int64_t iter[3] = {outer, k, inner};
    const int64_t out_strides[3] = {n * inner, inner, 1}, src_strides[3] = {k * inner, inner, 1};
    const int64_t index_strides[3] = {0, 1, 0};
    cuda::launch_scatter_add(static_cast<int>(out.dtype()), out.data_ptr(), out_strides, n,
                             s.data_ptr(), src_strides, a.idx.data<int64_t>(), index_strides, 3,
                             iter, 1, true, {}, cuda_ops::stream_of(out));
    cuda_ops::launched(out);
    return;
  }
  cpu::visit_numeric(out.dtype(), "index_add", [&](auto tag) {
    using T = typename decltype(tag)::type;
    index_add_kernel<T>(out.data<T>(), s.data<T>(), a.idx.data<int64_t>(), outer, shape[a.d],
                        a.idx.numel(), inner, static_cast<T>(alpha));
  });
}

Tensor index_add_forward(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         double alpha) {
  IndexAddArgs a = index_add_args(self, dim, index, src, alpha, "index_add");
  DType rt = promote(self.dtype(), src.dtype());
  Tensor out = accumulator_copy(self, compute_type(rt));
  index_add_into(out, a, src, alpha);
  return out.dtype() == rt ? out : out.to(rt);
}

// --- masks ------------------------------------------------------------------------

void check_mask(const Tensor& t, const Tensor& mask, const char* op) {
  check_device(t, mask, op, "a mask");
  FK_CHECK(mask.dtype() == DType::Bool, op, "a bool mask",
           std::string("a mask of dtype ") + name(mask.dtype()));
}

// out (contiguous) = mask ? value : t; out may be t itself.
void masked_fill_cuda(Tensor& out, const Tensor& t, const Tensor& mask, double value) {
  const Dims& shape = out.shape();
  if (shape.numel() == 0) return;
  Tensor fill = full(Dims{}, value, {t.dtype(), t.device()});
  Dims ms = cuda_ops::broadcast_strides(mask, shape), ts = cuda_ops::broadcast_strides(t, shape);
  Dims fs = Dims::filled(shape.size(), 0);
  cuda::launch_where(static_cast<int>(t.dtype()), mask.data_ptr(), fill.data_ptr(), t.data_ptr(),
                     out.data_ptr(), shape.size(), shape.data(), ms.data(), fs.data(), ts.data(),
                     cuda_ops::stream_of(t));
  cuda_ops::launched(t);
}

void masked_fill_kernel(Tensor& out, const Tensor& t, const Tensor& mask, double value) {
  if (t.device().is_cuda()) return masked_fill_cuda(out, t, mask, value);
  Tensor fill = full(Dims{}, value, {t.dtype()});
  visit_width(t.itemsize(), [&](auto tag) {
    using W = typename decltype(tag)::type;
    const W v = *static_cast<const W*>(fill.data_ptr());
    cpu::map2<W, W, bool>(out, t, mask, [v](W x, bool m) { return m ? v : x; });
  });
}

Tensor masked_fill_forward(const Tensor& t, const Tensor& mask, double value) {
  check_mask(t, mask, "masked_fill");
  check_broadcasts_to(mask, t.shape(), "masked_fill", "a mask");
  Tensor out = empty(t.shape(), {t.dtype(), t.device()});
  masked_fill_kernel(out, t, mask, value);
  return out;
}

// CUDA: the flat positions (row-major over `shape`) where the mask, broadcast
// to `shape`, is true, as an i64 tensor on the mask's device. The mask is read
// on the host (one byte per element copied back): the result's length is
// needed there anyway to allocate the output.
Tensor mask_positions(const Tensor& mask, const Dims& shape) {
  Tensor host = mask.expand(shape).contiguous().to(kCPU);
  const bool* m = host.data<bool>();
  std::vector<int64_t> pos;
  for (int64_t i = 0, n = host.numel(); i < n; ++i) {
    if (m[i]) pos.push_back(i);
  }
  return from_vector(pos).to(mask.device());
}

Tensor masked_select_forward(const Tensor& t, const Tensor& mask) {
  check_mask(t, mask, "masked_select");
  Dims shape = broadcast_shapes(t.shape(), mask.shape(), "masked_select");
  if (t.device().is_cuda()) {
    Tensor pos = mask_positions(mask, shape);
    if (pos.numel() == 0) return empty(Dims{0}, {t.dtype(), t.device()});
    Tensor flat = t.expand(shape).contiguous().reshape(Dims{shape.numel()});
    return index_select(flat, 0, pos);
  }
  Tensor te = t.expand(shape), me = mask.expand(shape);
  auto loop = cpu::make_loop<2>(shape, {&te, &me});
  int64_t count = 0;
  if (loop.numel > 0) {
    cpu::run_range(loop, 0, loop.numel, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) count += *reinterpret_cast<const bool*>(p[1] + i * s[1]);
    });
  }
  Tensor out = empty(Dims{count}, {t.dtype()});
  if (count == 0) return out;
  visit_width(t.itemsize(), [&](auto tag) {
    using W = typename decltype(tag)::type;
    W* o = static_cast<W*>(out.data_ptr());
    cpu::run_range(loop, 0, loop.numel, [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        if (*reinterpret_cast<const bool*>(p[1] + i * s[1])) {
          *o++ = *reinterpret_cast<const W*>(p[0] + i * s[0]);
        }
      }
    });
  });
  return out;
}

// --- autograd nodes -----------------------------------------------------------------

struct IndexSelectBackward : autograd::Node {
  autograd::SavedTensor index;
  Dims t_shape;
  int64_t dim = 0;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {index_select_backward(g[0], t_shape, dim, index.unpack(name()))};
  }
  const char* name() const override { return "IndexSelectBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(index); }
};

struct GatherBackward : autograd::Node {
  autograd::SavedTensor index;
  Dims t_shape;
  int64_t dim = 0;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {gather_backward(g[0], t_shape, dim, index.unpack(name()))};
  }
  const char* name() const override { return "GatherBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(index); }
};

// Shared by scatter_add (grad_src = gather) and index_add (grad_src = alpha * index_select).
struct AddAtBackward : autograd::Node {
  bool scatter = true;
  autograd::SavedTensor index;
  int64_t dim = 0;
  double alpha = 1.0;
  Dims self_shape, src_shape;
  DType self_dtype, src_dtype;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const Tensor& g = grads[0];
    Tensor gs, gsrc;
    if (next[0].fn) gs = grad_for(g, self_shape, self_dtype);
    if (next[1].fn) {
      const Tensor& idx = index.unpack(name());
      Tensor r = scatter ? gather(g, dim, idx) : index_select(g, dim, idx);
      if (alpha != 1.0) r = mul(r, alpha);
      gsrc = grad_for(r, src_shape, src_dtype);
    }
    return {gs, gsrc};
  }
  const char* name() const override { return scatter ? "ScatterAddBackward" : "IndexAddBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(index); }
};

struct MaskedFillBackward : autograd::Node {
  autograd::SavedTensor mask;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {masked_fill(g[0], mask.unpack(name()), 0.0)};
  }
  const char* name() const override { return "MaskedFillBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(mask); }
};

struct MaskedSelectBackward : autograd::Node {
  autograd::SavedTensor mask;
  Dims t_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {masked_select_backward(g[0], mask.unpack(name()), t_shape)};
  }
  const char* name() const override { return "MaskedSelectBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(mask); }
};

Tensor record_add_at(Tensor out, bool scatter, const Tensor& self, int64_t dim, const Tensor& index,
                     const Tensor& src, double alpha) {
  if (!autograd::needs_grad(self, src)) return out;
  auto node = std::make_shared<AddAtBackward>();
  node->scatter = scatter;
  if (autograd::tensor_requires_grad(src)) node->index = index;
  node->dim = dim;
  node->alpha = alpha;
  node->self_shape = self.shape();
  node->src_shape = src.shape();
  node->self_dtype = self.dtype();
  node->src_dtype = src.dtype();
  autograd::record(node, {self, src}, out);
  return out;
}

}  // namespace

// --- public ops ------------------------------------------------------------------------

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  profile::OpScope scope("index_select");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = index_select_forward(t, dim, index);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<IndexSelectBackward>();
    node->index = index;
    node->t_shape = t.shape();
    node->dim = dim;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  profile::OpScope scope("gather");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = gather_forward(t, dim, index);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<GatherBackward>();
    node->index = index;
    node->t_shape = t.shape();
    node->dim = dim;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  profile::OpScope scope("scatter_add");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = scatter_add_forward(self, dim, index, src);
  }
  return record_add_at(out, true, self, dim, index, src, 1.0);
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                 double alpha) {
  profile::OpScope scope("index_add");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = index_add_forward(self, dim, index, src, alpha);
  }
  return record_add_at(out, false, self, dim, index, src, alpha);
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, double value) {
  profile::OpScope scope("masked_fill");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = masked_fill_forward(t, mask, value);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<MaskedFillBackward>();
    node->mask = mask;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor masked_select(const Tensor& t, const Tensor& mask) {
  profile::OpScope scope("masked_select");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = masked_select_forward(t, mask);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<MaskedSelectBackward>();
    node->mask = mask;
    node->t_shape = t.shape();
    autograd::record(node, {t}, out);
  }
  return out;
}

// --- in place ------------------------------------------------------------------------

Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  check_inplace(self, src, "scatter_add_");
  profile::OpScope scope("scatter_add_");
  ScatterArgs a = scatter_args(self, dim, index, src, "scatter_add_");
  FK_CHECK(promote(self.dtype(), src.dtype()) == self.dtype() || is_half(self.dtype()),
           "scatter_add_", std::string("a source castable to self's dtype ") + name(self.dtype()),
           name(src.dtype()));
  if (compute_type(self.dtype()) == self.dtype()) {
    self.bump_version();
    scatter_into(self, a, src);
    return self;
  }
  Tensor out = accumulator_copy(self, compute_type(self.dtype()));
  scatter_into(out, a, src);
  self.copy_(out);
  return self;
}

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                   double alpha) {
  check_inplace(self, src, "index_add_");
  profile::OpScope scope("index_add_");
  IndexAddArgs a = index_add_args(self, dim, index, src, alpha, "index_add_");
  FK_CHECK(promote(self.dtype(), src.dtype()) == self.dtype() || is_half(self.dtype()),
           "index_add_", std::string("a source castable to self's dtype ") + name(self.dtype()),
           name(src.dtype()));
  if (self.is_contiguous() && compute_type(self.dtype()) == self.dtype()) {
    self.bump_version();
    index_add_into(self, a, src, alpha);
    return self;
  }
  Tensor out = accumulator_copy(self, compute_type(self.dtype()));
  index_add_into(out, a, src, alpha);
  self.copy_(out);
  return self;
}

Tensor& masked_fill_(Tensor& self, const Tensor& mask, double value) {
  check_inplace(self, Tensor(), "masked_fill_");
  profile::OpScope scope("masked_fill_");
  check_mask(self, mask, "masked_fill_");
  check_broadcasts_to(mask, self.shape(), "masked_fill_", "a mask");
  self.bump_version();
  if (self.device().is_cuda() && !self.is_contiguous()) {
    // The device kernel writes a contiguous output: fill a copy, copy it back.
    Tensor out = empty(self.shape(), {self.dtype(), self.device()});
    masked_fill_kernel(out, self, mask, value);
    self.copy_(out);
    return self;
  }
  masked_fill_kernel(self, self, mask, value);
  return self;
}

// --- backward functions ----------------------------------------------------------------

Tensor index_select_backward(const Tensor& g, const Dims& t_shape, int64_t dim,
                             const Tensor& index) {
  return index_add(zeros(t_shape, {g.dtype(), g.device()}), dim, index, g);
}

Tensor gather_backward(const Tensor& g, const Dims& t_shape, int64_t dim, const Tensor& index) {
  int d = wrap_dim(dim, t_shape.size(), "gather backward");
  Dims shape = g.shape();  // t's shape with the sizes t was broadcast to
  shape[d] = t_shape[d];
  Tensor r = scatter_add(zeros(shape, {g.dtype(), g.device()}), d, index, g);
  return autograd::sum_to(r, t_shape);
}

Tensor masked_select_backward(const Tensor& g, const Tensor& mask, const Dims& t_shape) {
  Dims shape = broadcast_shapes(t_shape, mask.shape(), "masked_select backward");
  if (g.device().is_cuda()) {
    Tensor pos = mask_positions(mask, shape);
    FK_CHECK(
        g.numel() == pos.numel(), "masked_select backward",
        "a gradient with one element per selected position (" + std::to_string(pos.numel()) + ")",
        std::to_string(g.numel()) + " elements");
    Tensor flat = zeros(Dims{shape.numel()}, {g.dtype(), g.device()});
    if (pos.numel() > 0) flat = index_add(flat, 0, pos, g.contiguous().reshape(Dims{g.numel()}));
    return autograd::sum_to(flat.reshape(shape), t_shape);
  }
  Tensor out = zeros(shape, {g.dtype()});
  Tensor me = mask.expand(shape);
  Tensor gc = g.contiguous();
  auto loop = cpu::make_loop<2>(shape, {&out, &me});
  if (loop.numel > 0) {
    visit_width(g.itemsize(), [&](auto tag) {
      using W = typename decltype(tag)::type;
      const W* src = static_cast<const W*>(gc.data_ptr());
      const W* end = src + gc.numel();
      cpu::run_range(loop, 0, loop.numel, [&](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          if (*reinterpret_cast<const bool*>(p[1] + i * s[1])) {
            FK_CHECK(src < end, "masked_select backward",
                     "a gradient with one element per selected position",
                     std::to_string(gc.numel()) + " elements");
            *reinterpret_cast<W*>(p[0] + i * s[0]) = *src++;
          }
        }
      });
    });
  }
  return autograd::sum_to(out, t_shape);
}

}  // namespace fk
