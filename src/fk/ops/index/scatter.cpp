#include "fk/ops/index/scatter.h"

#include <algorithm>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/copy.h"
#include "fk/ops/cpu/copy_bytes.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/index/checks.h"
#include "fk/ops/index/select.h"
#include "fk/ops/integral_holds.h"
#include "fk/parallel.h"
#include "fk/profile.h"

namespace fk {
namespace {

using index_detail::accumulator_copy;
using index_detail::check_broadcasts_to;
using index_detail::check_device;
using index_detail::check_inplace;
using index_detail::checked_index;
using index_detail::grad_for;

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
  Tensor idx;              // i64, expanded to the scatter shape
  cuda::IndexCheck check;  // CUDA: where the kernel records a bad index
};

ScatterArgs scatter_args(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                         const char* op) {
  check_device(self, src, op, "a source");
  FK_CHECK(self.dim() >= 1, op, "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() == self.dim(), op, "an index with self's rank " + fk::to_text(self.dim()),
           "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, self.dim(), op);
  Dims shape = self.shape();
  shape[d] = index.size(d);
  for (int i = 0; i < self.dim(); ++i) {
    FK_CHECK(i == d || index.size(i) == shape[i] || index.size(i) == 1, op,
             "index sizes equal to self's (or 1) outside dim " + fk::to_text(d),
             "self " + self.shape().str() + " and index " + index.shape().str());
  }
  check_broadcasts_to(src, shape, op, "a source");
  index_detail::CheckedIndex checked = checked_index(self, index, self.size(d), d, op);
  return {d, checked.idx.expand(shape), checked.check};
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
                             a.idx.strides().data(), shape.size(), shape.data(), a.d, true, a.check,
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
  Tensor idx;              // contiguous i64
  Dims src_shape;          // self's shape with the index length at d
  cuda::IndexCheck check;  // CUDA: where the kernel records a bad index
};

// `prechecked`: the index's values were checked on the host before its
// upload (index_add_prechecked), so they are not read again.
IndexAddArgs index_add_args(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                            double alpha, const char* op, bool prechecked = false) {
  check_device(self, src, op, "a source");
  FK_CHECK(self.dim() >= 1, op, "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() <= 1, op, "a 1-D index", "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, self.dim(), op);
  const index_detail::CheckedIndex checked =
      prechecked ? index_detail::CheckedIndex{index_detail::prechecked_index(self, index, op), {}}
                 : checked_index(self, index, self.size(d), d, op);
  const Tensor& idx = checked.idx;
  Dims shape = self.shape();
  shape[d] = idx.numel();
  check_broadcasts_to(src, shape, op, "a source");
  DType rt = promote(self.dtype(), src.dtype());
  // In range too: the kernel casts alpha to the result's dtype (3e9 into
  // i32 gave INT_MIN; add refuses it alike).
  FK_CHECK(integral_holds(rt, alpha), op, "an integer alpha (in range) for integer tensors",
           fk::to_text(alpha));
  return {d, idx, shape, checked.check};
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
                             iter, 1, true, a.check, cuda_ops::stream_of(out));
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
                         double alpha, bool prechecked = false) {
  IndexAddArgs a = index_add_args(self, dim, index, src, alpha, "index_add", prechecked);
  DType rt = promote(self.dtype(), src.dtype());
  Tensor out = accumulator_copy(self, compute_type(rt));
  index_add_into(out, a, src, alpha);
  return out.dtype() == rt ? out : out.to(rt);
}

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
      gsrc = scatter ? scatter_add_src_backward(g, dim, idx, src_shape, src_dtype)
                     : index_add_src_backward(g, dim, idx, src_shape, src_dtype, alpha);
    }
    return {gs, gsrc};
  }
  const char* name() const override { return scatter ? "ScatterAddBackward" : "IndexAddBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(index); }
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

Tensor index_add(const Tensor& self, int64_t dim, const std::vector<int64_t>& index,
                 const Tensor& src, double alpha) {
  profile::OpScope scope("index_add");
  FK_CHECK(self.dim() >= 1, "index_add", "a tensor with at least 1 dimension", "a 0-dim tensor");
  const int d = wrap_dim(dim, self.dim(), "index_add");
  index_detail::check_host_index(index, self.size(d), d, "index_add");
  const Tensor idx = from_vector(index, Dims{static_cast<int64_t>(index.size())}, self.device());
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = index_add_forward(self, dim, idx, src, alpha, true);
  }
  return record_add_at(out, false, self, dim, idx, src, alpha);
}

namespace index_detail {

Tensor index_add_prechecked(const Tensor& self, int64_t dim, const Tensor& index,
                            const Tensor& src) {
  profile::OpScope scope("index_add");
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = index_add_forward(self, dim, index, src, 1.0, true);
  }
  return record_add_at(out, false, self, dim, index, src, 1.0);
}

}  // namespace index_detail

namespace {

// src (or the index) as it was before self is written: a copy when they
// share memory (the adds would otherwise read values they had already
// changed; an index read after a write could point outside the range checked).
Tensor unaliased(const Tensor& self, const Tensor& src) {
  return overlaps(self, src) ? src.clone() : src;
}

}  // namespace

Tensor& scatter_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& given) {
  check_inplace(self, given, "scatter_add_");
  const Tensor src = unaliased(self, given), idx = unaliased(self, index);
  profile::OpScope scope("scatter_add_");
  ScatterArgs a = scatter_args(self, dim, idx, src, "scatter_add_");
  FK_CHECK(can_write_into(self.dtype(), src.dtype()), "scatter_add_",
           std::string("a source castable to self's dtype ") + name(self.dtype()),
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

Tensor& index_add_(Tensor& self, int64_t dim, const Tensor& index, const Tensor& given,
                   double alpha) {
  check_inplace(self, given, "index_add_");
  const Tensor src = unaliased(self, given), idx = unaliased(self, index);
  profile::OpScope scope("index_add_");
  IndexAddArgs a = index_add_args(self, dim, idx, src, alpha, "index_add_");
  FK_CHECK(can_write_into(self.dtype(), src.dtype()), "index_add_",
           std::string("a source castable to self's dtype ") + name(self.dtype()),
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

Tensor scatter_add_src_backward(const Tensor& g, int64_t dim, const Tensor& index,
                                const Dims& src_shape, DType src_dtype) {
  return grad_for(gather(g, dim, index), src_shape, src_dtype);
}

Tensor index_add_src_backward(const Tensor& g, int64_t dim, const Tensor& index,
                              const Dims& src_shape, DType src_dtype, double alpha) {
  Tensor r = index_select(g, dim, index);
  if (alpha != 1.0) r = mul(r, alpha);
  return grad_for(r, src_shape, src_dtype);
}

}  // namespace fk
