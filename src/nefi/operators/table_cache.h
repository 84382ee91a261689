#pragma once
// An operator's fixed tables (the elliptic operators' right-hand sides,
// sinks, observation matrices and references; depth_compensated's cell
// weights, pointwise's weight map, NV's frequency grid) converted to a dtype
// and moved to a device once per (device, dtype) and kept: a training step on
// a device then never uploads. Operator::prepare_tables (or an eager
// first call) fills the cache before a capture; a host copy inside a capture
// would fail it, and a table made in a capture by device work alone is not
// kept (device_cache_policy.h). One cache per operator resolution, shared by
// its copies; thread safe.
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/tensor.h"
#include "nefi/operators/device_cache_policy.h"

namespace nefi {

template <typename Tables>
class TableCache {
 public:
  TableCache() = default;
  // capturing: whether a capture runs on a device now (tests pass their own).
  explicit TableCache(CaptureRunning capturing) : capturing_(std::move(capturing)) {}

  // The tables for (device, dtype), made by make(device, dtype) on the first call.
  template <typename Make>
  Tables get(fk::Device device, fk::DType dtype, Make&& make) {
    return get_keyed(device.str() + "/" + fk::name(dtype), device, dtype, make);
  }

  // The same for tables that also depend on the grid they serve (an operator
  // or loss called on several grids: thermal pinn_soft's surface and
  // cell-centre points): one per (grid, device, dtype).
  template <typename Make>
  Tables get(const fk::Dims& grid, fk::Device device, fk::DType dtype, Make&& make) {
    return get_keyed(grid.str() + "/" + device.str() + "/" + fk::name(dtype), device, dtype, make);
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return by_key_.size();
  }

 private:
  template <typename Make>
  Tables get_keyed(const std::string& key, fk::Device device, fk::DType dtype, Make& make) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    if (it != by_key_.end()) return it->second;
    if (capturing_(device)) return make(device, dtype);  // graph memory: not kept
    return by_key_.emplace(key, make(device, dtype)).first->second;
  }

  CaptureRunning capturing_ = capture_running;
  mutable std::mutex mu_;
  std::map<std::string, Tables> by_key_;
};

// t (a host f64 table, or undefined) in dtype on device.
inline fk::Tensor table_on(const fk::Tensor& t, fk::Device device, fk::DType dtype) {
  if (!t.defined()) return t;
  return t.to(dtype).to(device).contiguous();
}

// One host-built constant as each (device, dtype) it is applied in; the
// constant itself where nothing changes. One DeviceCopies serves one
// constant: callers pass the same `host` on every call.
class DeviceCopies {
 public:
  fk::Tensor get(const fk::Tensor& host, fk::DType dtype, fk::Device device) {
    if (host.dtype() == dtype && host.device() == device) return host;
    return cache_.get(device, dtype, [&host](fk::Device d, fk::DType t) {
      fk::autograd::NoGradGuard ng;
      return table_on(host.detach(), d, t);
    });
  }
  size_t size() const { return cache_.size(); }

 private:
  TableCache<fk::Tensor> cache_;
};

// Host f64 values (a loss's per-row scales) as one (n) f64 tensor on a
// device, made on the first call that meets those values there and handed
// back by later ones: a solver's eager warm-up step uploads them, its
// captured steps find them (their graph bakes the tensor's address in). The
// kMaxEntries most recent are kept; older ones are dropped only while no
// graph is alive (graphs_alive), so a graph never reads a dropped copy. None
// is made inside a capture: fk refuses the host copy there. Thread safe.
class HostValueCopies {
 public:
  static constexpr size_t kMaxEntries = 8;
  HostValueCopies() : HostValueCopies(any_live_graph) {}
  explicit HostValueCopies(GraphsAlive graphs_alive) : graphs_alive_(std::move(graphs_alive)) {}
  fk::Tensor get(const std::vector<double>& values, fk::Device device) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Entry& e : entries_)
      if (e.device == device && e.values == values) return e.tensor;
    fk::Tensor t = fk::from_vector(values, fk::Dims{static_cast<int64_t>(values.size())}, device);
    if (entries_.size() >= kMaxEntries && !graphs_alive_())
      entries_.erase(entries_.begin(), entries_.end() - (kMaxEntries - 1));
    entries_.push_back({values, device, t});
    return t;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    std::vector<double> values;
    fk::Device device;
    fk::Tensor tensor;
  };
  GraphsAlive graphs_alive_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // least recently made first
};

}  // namespace nefi
