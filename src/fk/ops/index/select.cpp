#include "fk/ops/index/select.h"

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
#include "fk/ops/index/checks.h"
#include "fk/ops/index/scatter.h"
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
using index_detail::prechecked_index;

using cpu::Bytes16;
using cpu::visit_width;

// --- index_select -----------------------------------------------------------

// `prechecked`: the index's values were checked on the host before its
// upload (the host-index form), so they are not read again.
Tensor index_select_forward(const Tensor& t, int64_t dim, const Tensor& index, bool prechecked) {
  FK_CHECK(t.dim() >= 1, "index_select", "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(index.dim() <= 1, "index_select", "a 1-D index",
           "an index of shape " + index.shape().str());
  int d = wrap_dim(dim, t.dim(), "index_select");
  const index_detail::CheckedIndex checked =
      prechecked ? index_detail::CheckedIndex{prechecked_index(t, index, "index_select"), {}}
                 : checked_index(t, index, t.size(d), d, "index_select");
  const Tensor& idx = checked.idx;
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
                              out.data_ptr(), outer, n, inner, k, checked.check,
                              cuda_ops::stream_of(t));
    cuda_ops::launched(t);
    return out;
  }
  const int64_t rows = outer * k;
  const int64_t* ip = idx.data<int64_t>();
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / inner);
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
             "index sizes equal to the input's (or 1) outside dim " + fk::to_text(d),
             "input " + t.shape().str() + " and index " + index.shape().str());
    out[i] = a == 1 ? b : a;
  }
  return out;
}

void check_gather_rank(const Tensor& t, const Dims& index_shape) {
  FK_CHECK(t.dim() >= 1, "gather", "a tensor with at least 1 dimension", "a 0-dim tensor");
  FK_CHECK(static_cast<int>(index_shape.size()) == t.dim(), "gather",
           "an index with the input's rank " + fk::to_text(t.dim()),
           "an index of shape " + index_shape.str());
}

// `prechecked`: the index's values were checked on the host before its
// upload (the host-index form), so they are not checked again.
Tensor gather_forward(const Tensor& t, int64_t dim, const Tensor& index, bool prechecked) {
  check_gather_rank(t, index.shape());
  int d = wrap_dim(dim, t.dim(), "gather");
  Dims shape = gather_shape(t, d, index);
  const index_detail::CheckedIndex checked =
      prechecked ? index_detail::CheckedIndex{prechecked_index(t, index, "gather"), {}}
                 : checked_index(t, index, t.size(d), d, "gather");
  Tensor idx = checked.idx.expand(shape);
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
                        shape.size(), shape.data(), d, checked.check, cuda_ops::stream_of(t));
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

struct IndexSelectBackward : autograd::Node {
  autograd::SavedTensor index;
  Dims t_shape;
  int64_t dim = 0;
  bool prechecked = false;  // the host-index form: its backward reads nothing back either
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    const Tensor& idx = index.unpack(name());
    if (prechecked)
      return {index_detail::index_add_prechecked(zeros(t_shape, {g[0].dtype(), g[0].device()}), dim,
                                                 idx, g[0])};
    return {index_select_backward(g[0], t_shape, dim, idx)};
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

}  // namespace

namespace {

Tensor index_select_recorded(const Tensor& t, int64_t dim, const Tensor& index, bool prechecked) {
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = index_select_forward(t, dim, index, prechecked);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<IndexSelectBackward>();
    node->index = index;
    node->t_shape = t.shape();
    node->dim = dim;
    node->prechecked = prechecked;
    autograd::record(node, {t}, out);
  }
  return out;
}

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  profile::OpScope scope("index_select");
  return index_select_recorded(t, dim, index, false);
}

Tensor index_select(const Tensor& t, int64_t dim, const std::vector<int64_t>& index) {
  profile::OpScope scope("index_select");
  FK_CHECK(t.dim() >= 1, "index_select", "a tensor with at least 1 dimension", "a 0-dim tensor");
  const int d = wrap_dim(dim, t.dim(), "index_select");
  index_detail::check_host_index(index, t.size(d), d, "index_select");
  const Tensor idx = from_vector(index, Dims{static_cast<int64_t>(index.size())}, t.device());
  return index_select_recorded(t, dim, idx, true);
}

namespace {

Tensor gather_recorded(const Tensor& t, int64_t dim, const Tensor& index, bool prechecked) {
  Tensor out;
  {
    autograd::NoGradGuard ng;
    out = gather_forward(t, dim, index, prechecked);
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

}  // namespace

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  profile::OpScope scope("gather");
  return gather_recorded(t, dim, index, false);
}

Tensor gather(const Tensor& t, int64_t dim, const std::vector<int64_t>& index,
              const Dims& index_shape) {
  profile::OpScope scope("gather");
  check_gather_rank(t, index_shape);
  FK_CHECK(static_cast<int64_t>(index.size()) == index_shape.numel(), "gather",
           "as many index values as the index shape " + index_shape.str() + " holds (" +
               fk::to_text(index_shape.numel()) + ")",
           fk::to_text(index.size()) + " values");
  const int d = wrap_dim(dim, t.dim(), "gather");
  index_detail::check_host_index(index, t.size(d), d, "gather");
  return gather_recorded(t, dim, from_vector(index, index_shape, t.device()), true);
}

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

}  // namespace fk
