#pragma once
// DeviceCopies: one host-built constant of an operator (a weight map, a
// frequency grid) as each (device, dtype) it is applied in, made on the first
// request and reused. An operator that copied such a constant at every call
// could not be captured in a CUDA graph (a captured step may not copy from the
// host); DeviceTables::prepare_tables fills it before a capture, and an eager
// first call fills it as well. Shared (std::shared_ptr) by the copies of one
// operator at one resolution; thread-safe. Memory: one copy per key.
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "fk/device.h"
#include "fk/dtype.h"
#include "fk/tensor.h"

namespace nefi {

class DeviceCopies {
 public:
  // `host` converted to `dtype` (on the host) and moved to `device`: the same
  // tensor on every call with one key; `host` itself when it is already that.
  // One DeviceCopies serves one constant: callers pass the same `host`.
  fk::Tensor get(const fk::Tensor& host, fk::DType dtype, fk::Device device);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, fk::Tensor> copies_;
};

}  // namespace nefi
