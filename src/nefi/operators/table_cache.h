#pragma once
// An operator's fixed tables (the elliptic operators' right-hand sides,
// sinks, observation matrices and references, depth_compensated's cell
// weights) converted to a dtype and moved to a device once per (device,
// dtype) and kept: a training step on a device then never uploads (its
// eager warm-up step makes the first call, before any capture; a host copy
// inside a capture fails it). One cache per operator resolution, shared by
// its copies; thread safe.
#include <map>
#include <mutex>
#include <string>

#include "fk/tensor.h"

namespace nefi {

template <typename Tables>
class TableCache {
 public:
  // The tables for (device, dtype), made by make(device, dtype) on the first call.
  template <typename Make>
  Tables get(fk::Device device, fk::DType dtype, Make&& make) {
    const std::string key = device.str() + "/" + fk::name(dtype);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) it = by_key_.emplace(key, make(device, dtype)).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, Tables> by_key_;
};

// t (a host f64 table, or undefined) in dtype on device.
inline fk::Tensor table_on(const fk::Tensor& t, fk::Device device, fk::DType dtype) {
  if (!t.defined()) return t;
  return t.to(dtype).to(device).contiguous();
}

}  // namespace nefi
