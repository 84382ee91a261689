#include "nefi/operators/device_copies.h"

#include "fk/autograd.h"

namespace nefi {

fk::Tensor DeviceCopies::get(const fk::Tensor& host, fk::DType dtype, fk::Device device) {
  if (host.dtype() == dtype && host.device() == device) return host;
  std::lock_guard<std::mutex> lock(mu_);
  fk::Tensor& copy = copies_[{device.str(), static_cast<int>(dtype)}];
  if (!copy.defined()) {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor converted = host.dtype() == dtype ? host.detach() : host.detach().to(dtype);
    copy = converted.device() == device ? converted : converted.to(device);
  }
  return copy;
}

size_t DeviceCopies::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return copies_.size();
}

}  // namespace nefi
