#include "nefi/solve/split_rows.h"

#include <cstring>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi {
namespace {

struct SplitRowsBackward : fk::autograd::Node {
  fk::Dims shape;
  fk::DType dtype = fk::DType::F32;
  const char* name() const override { return "SplitRowsBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("split_rows_backward");
    const fk::Device device = next[0].device;  // x's (recorded only when x needs a gradient)
    if (!device.is_cpu()) return {on_device(grads, device)};
    fk::Tensor out = fk::empty(shape, {dtype});
    const int64_t n = shape[0];
    const size_t row = static_cast<size_t>(out.numel() / std::max<int64_t>(n, 1)) * out.itemsize();
    char* base = static_cast<char*>(out.data_ptr());
    for (int64_t b = 0; b < n; ++b) {
      const size_t i = static_cast<size_t>(b);
      if (i < grads.size() && grads[i].defined()) {
        fk::Tensor g = grads[i];
        if (g.dtype() != dtype) g = g.to(dtype);
        if (!g.is_contiguous()) g = g.contiguous();
        std::memcpy(base + i * row, g.data_ptr(), row);
      } else {
        std::memset(base + i * row, 0, row);
      }
    }
    return {out};
  }

  // The same on x's device (the row copies above read host memory): one
  // copy per row's gradient into a zeroed buffer there.
  fk::Tensor on_device(const std::vector<fk::Tensor>& grads, fk::Device device) const {
    fk::autograd::NoGradGuard ng;
    fk::Tensor out = fk::zeros(shape, {dtype, device});
    for (size_t i = 0; i < grads.size() && static_cast<int64_t>(i) < shape[0]; ++i)
      if (grads[i].defined()) out.select(0, static_cast<int64_t>(i)).copy_(grads[i]);
    return out;
  }
};

}  // namespace

std::vector<fk::Tensor> split_rows(const fk::Tensor& x) {
  fk::profile::OpScope scope("split_rows");
  FK_CHECK(x.dim() >= 1 && x.size(0) >= 1 &&
               (x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64),
           "nefi::split_rows", "an f32/f64 tensor (N, ...) with N >= 1", x.shape().str());
  const fk::Tensor xc = x.is_contiguous() ? x : x.contiguous();
  const fk::Tensor xd = xc.detach();
  std::vector<fk::Tensor> out;
  out.reserve(static_cast<size_t>(x.size(0)));
  for (int64_t b = 0; b < x.size(0); ++b) out.push_back(xd.select(0, b));
  if (fk::autograd::needs_grad(xc)) {
    auto node = std::make_shared<SplitRowsBackward>();
    node->shape = xc.shape();
    node->dtype = xc.dtype();
    node->num_outputs = static_cast<uint32_t>(out.size());
    std::vector<fk::Tensor*> outs;
    for (auto& t : out) outs.push_back(&t);
    fk::autograd::record(node, {xc}, outs);
  }
  return out;
}

}  // namespace nefi
