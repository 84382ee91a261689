#pragma once
// How many blocks of a kernel can be resident on a whole device at once (the
// grid limit of a cooperative launch), remembered per (device, kernel, block
// size): the occupancy calculator and the SM count cost a few microseconds
// per query, and their answer cannot change within a process, so an eager
// heat rollout (one launch per time step) asks once instead of every step.
// Plain C++ (the query is the caller's), so the caching is tested on the host
// (tests/nefi/operators/resident_blocks_cache_test.cpp). Thread-safe; a query
// that throws caches nothing.
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>

namespace nefi::cuda {

class ResidentBlocksCache {
 public:
  // The value for (device, kernel, threads): `query()` on the first call for
  // that key, the remembered value after it.
  template <typename Query>
  int get(int device, const void* kernel, int threads, Query&& query) {
    const Key key{device, kernel, threads};
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = values_.find(key);
      if (it != values_.end()) return it->second;
    }
    // Queried outside the lock: two threads may both ask on a first use and
    // agree on the answer; the first one stored is kept.
    const int value = query();
    std::lock_guard<std::mutex> lock(mu_);
    return values_.emplace(key, value).first->second;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return values_.size();
  }

 private:
  using Key = std::tuple<int, const void*, int>;
  mutable std::mutex mu_;
  std::map<Key, int> values_;
};

}  // namespace nefi::cuda
