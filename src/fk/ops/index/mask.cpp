#include "fk/ops/index/mask.h"

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
#include "fk/ops/index/scatter.h"
#include "fk/ops/index/select.h"
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

using cpu::visit_width;

// --- masks ------------------------------------------------------------------------

void check_mask(const Tensor& t, const Tensor& mask, const char* op) {
  check_device(t, mask, op, "a mask");
  FK_CHECK(mask.dtype() == DType::Bool, op, "a bool mask",
           std::string("a mask of dtype ") + name(mask.dtype()));
}

// value as a 0-d tensor of t's dtype and device, refused in `op`'s name
// (fill_'s own check named an op the caller never called).
Tensor fill_value(const Tensor& t, double value, const char* op) {
  try {
    return full(Dims{}, value, {t.dtype(), t.device()});
  } catch (const Error& e) {
    throw Error(op, e.expected(), e.given());
  }
}

// out (contiguous) = mask ? value : t; out may be t itself.
void masked_fill_cuda(Tensor& out, const Tensor& t, const Tensor& mask, const Tensor& fill) {
  const Dims& shape = out.shape();
  if (shape.numel() == 0) return;
  Dims ms = cuda_ops::broadcast_strides(mask, shape), ts = cuda_ops::broadcast_strides(t, shape);
  Dims fs = Dims::filled(shape.size(), 0);
  cuda::launch_where(static_cast<int>(t.dtype()), mask.data_ptr(), fill.data_ptr(), t.data_ptr(),
                     out.data_ptr(), shape.size(), shape.data(), ms.data(), fs.data(), ts.data(),
                     cuda_ops::stream_of(t));
  cuda_ops::launched(t);
}

void masked_fill_kernel(Tensor& out, const Tensor& t, const Tensor& mask, double value,
                        const char* op) {
  const Tensor fill = fill_value(t, value, op);
  if (t.device().is_cuda()) return masked_fill_cuda(out, t, mask, fill);
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
  masked_fill_kernel(out, t, mask, value, "masked_fill");
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

struct MaskedFillBackward : autograd::Node {
  autograd::SavedTensor mask;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {masked_fill_backward(g[0], mask.unpack(name()))};
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

}  // namespace

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

Tensor& masked_fill_(Tensor& self, const Tensor& mask_given, double value) {
  check_inplace(self, Tensor(), "masked_fill_");
  profile::OpScope scope("masked_fill_");
  // The mask as it was before self is written (a bool self may share its
  // memory: the fills would spread along the array).
  const Tensor mask = overlaps(self, mask_given) ? mask_given.clone() : mask_given;
  check_mask(self, mask, "masked_fill_");
  check_broadcasts_to(mask, self.shape(), "masked_fill_", "a mask");
  self.bump_version();
  if (self.device().is_cuda() && !self.is_contiguous()) {
    // The device kernel writes a contiguous output: fill a copy, copy it back.
    Tensor out = empty(self.shape(), {self.dtype(), self.device()});
    masked_fill_kernel(out, self, mask, value, "masked_fill_");
    self.copy_(out);
    return self;
  }
  masked_fill_kernel(self, self, mask, value, "masked_fill_");
  return self;
}

Tensor masked_select_backward(const Tensor& g, const Tensor& mask, const Dims& t_shape) {
  Dims shape = broadcast_shapes(t_shape, mask.shape(), "masked_select backward");
  if (g.device().is_cuda()) {
    Tensor pos = mask_positions(mask, shape);
    FK_CHECK(g.numel() == pos.numel(), "masked_select backward",
             "a gradient with one element per selected position (" + fk::to_text(pos.numel()) + ")",
             fk::to_text(g.numel()) + " elements");
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
                     fk::to_text(gc.numel()) + " elements");
            *reinterpret_cast<W*>(p[0] + i * s[0]) = *src++;
          }
        }
      });
    });
  }
  return autograd::sum_to(out, t_shape);
}

Tensor masked_fill_backward(const Tensor& g, const Tensor& mask) {
  return masked_fill(g, mask, 0.0);
}

}  // namespace fk
