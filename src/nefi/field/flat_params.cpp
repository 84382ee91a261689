#include "nefi/field/flat_params.h"

#include <cstring>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi {
namespace {

// Backward of views(): scatters each view's gradient into its slot of one flat
// gradient (zeros where no gradient flowed). One op whatever the parameter count.
struct FlatViewsBackward : fk::autograd::Node {
  std::vector<int64_t> offsets, sizes;
  int64_t total = 0;
  fk::DType dtype = fk::DType::F32;
  fk::Device device = fk::kCPU;
  const char* name() const override { return "FlatViewsBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("flat_views_backward");
    if (!device.is_cpu()) return {on_device(grads)};
    fk::Tensor g = fk::empty({total}, {dtype});
    char* base = static_cast<char*>(g.data_ptr());
    const size_t item = g.itemsize();
    int64_t covered = 0;
    for (size_t i = 0; i < offsets.size(); ++i) {
      char* dst = base + offsets[i] * item;
      if (i < grads.size() && grads[i].defined()) {
        fk::Tensor gi = grads[i];
        if (gi.dtype() != dtype) gi = gi.to(dtype);
        if (!gi.is_contiguous()) gi = gi.contiguous();
        std::memcpy(dst, gi.data_ptr(), sizes[i] * item);
      } else {
        std::memset(dst, 0, sizes[i] * item);
      }
      covered += sizes[i];
    }
    (void)covered;
    return {g};
  }

  // The same with device copies: one per gradient into a zeroed buffer.
  fk::Tensor on_device(const std::vector<fk::Tensor>& grads) const {
    fk::autograd::NoGradGuard ng;
    fk::Tensor g = fk::zeros({total}, {dtype, device});
    for (size_t i = 0; i < offsets.size() && i < grads.size(); ++i)
      if (grads[i].defined()) g.narrow(0, offsets[i], sizes[i]).copy_(grads[i].reshape({sizes[i]}));
    return g;
  }
};

}  // namespace

int FlatParams::add(std::string name, fk::Dims shape) {
  FK_CHECK(!flat_.defined(), "nefi::FlatParams::add", "parameters added before allocate()",
           "a call after it (" + name + ")");
  entries_.push_back({std::move(name), shape, total_});
  total_ += shape.numel();
  return static_cast<int>(entries_.size()) - 1;
}

void FlatParams::allocate(fk::DType dtype) {
  flat_ = fk::zeros({total_}, {dtype});
  flat_.set_requires_grad(true);
}

void FlatParams::to(fk::Device d) {
  FK_CHECK(flat_.defined(), "nefi::FlatParams::to", "an allocated buffer", "none");
  if (flat_.device() == d) return;
  fk::autograd::NoGradGuard ng;
  flat_ = flat_.detach().to(d);
  flat_.set_requires_grad(true);
}

void FlatParams::clear() {
  entries_.clear();
  total_ = 0;
  flat_ = fk::Tensor();
}

fk::Tensor FlatParams::raw(int i) const {
  const Entry& e = entries_.at(i);
  return flat_.detach().narrow(0, e.offset, e.shape.numel()).view(e.shape);
}

std::vector<fk::Tensor> FlatParams::views() const {
  FK_CHECK(flat_.defined(), "nefi::FlatParams::views", "an allocated buffer", "none");
  std::vector<fk::Tensor> out;
  out.reserve(entries_.size());
  for (int i = 0; i < size(); ++i) out.push_back(raw(i));
  if (fk::autograd::needs_grad(flat_)) {
    auto node = std::make_shared<FlatViewsBackward>();
    node->total = total_;
    node->dtype = flat_.dtype();
    node->device = flat_.device();
    for (const Entry& e : entries_) {
      node->offsets.push_back(e.offset);
      node->sizes.push_back(e.shape.numel());
    }
    node->num_outputs = static_cast<uint32_t>(out.size());
    std::vector<fk::Tensor*> outs;
    for (auto& t : out) outs.push_back(&t);
    fk::autograd::record(node, {flat_}, outs);
  }
  return out;
}

}  // namespace nefi
