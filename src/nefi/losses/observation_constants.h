#pragma once
// ObservationConstants: the tensors a loss derives from its observations
// alone (a normalised target, a scale, an energy, filtered data), made on the
// first forward that meets a given observation (in the prediction's dtype, on
// its device) and handed back by every later one. A solver's steps then
// neither recompute them nor read them on the host, and a captured step finds
// them made: the Solver's eager warm-up step makes them before the capture,
// so nothing the capture allocates outlives it.
//
// An entry is keyed by the observation and mask tensors themselves (held, so
// their storage cannot be reused under the key), their storage versions (an
// in-place change makes the constants anew), the dtype and the device; the
// kMaxEntries most recent are kept, and older ones dropped only while no
// CUDA graph is alive (graphs_alive): a captured step bakes the constants'
// addresses in, so dropping one under a live graph would leave its replays
// reading freed memory. Constants made while a capture runs on their device
// are handed back and not kept: until that capture's graph runs they are
// addresses that name no memory, and a failed capture never makes them real
// (nefi/operators/device_cache_policy.h). Thread-safe (a mutex; `make` runs
// under it, without autograd).
#include <functional>
#include <mutex>
#include <vector>

#include "fk/device.h"
#include "fk/dtype.h"
#include "fk/tensor.h"
#include "nefi/operators/device_cache_policy.h"

namespace nefi {

class ObservationConstants {
 public:
  static constexpr size_t kMaxEntries = 4;
  using Make = std::function<std::vector<fk::Tensor>()>;
  // graphs_alive: whether a graph may hold the constants' addresses now;
  // capturing: whether a capture runs on a device now (defaults:
  // device_cache_policy.h; tests pass their own).
  ObservationConstants();
  explicit ObservationConstants(GraphsAlive graphs_alive,
                                CaptureRunning capturing = capture_running);
  // The constants of (data, mask) in dtype on device: make()'s result, made
  // once. `mask` may be undefined.
  std::vector<fk::Tensor> get(const fk::Tensor& data, const fk::Tensor& mask, fk::DType dtype,
                              fk::Device device, const Make& make) const;
  // How many times make() ran (tests: the constants are made once).
  int64_t makes() const;
  size_t size() const;

 private:
  struct Entry {
    fk::Tensor data, mask;
    uint32_t data_version = 0, mask_version = 0;
    fk::DType dtype;
    fk::Device device;
    std::vector<fk::Tensor> values;
  };
  GraphsAlive graphs_alive_;
  CaptureRunning capturing_;
  mutable std::mutex mu_;
  mutable std::vector<Entry> entries_;  // least recently made first
  mutable int64_t makes_ = 0;
};

}  // namespace nefi
