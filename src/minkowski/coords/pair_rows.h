#pragma once
// One side of a kernel map's pairs (KernelMap::in_rows or out_rows): an int32
// row per pair, in a LargeArray. A map built on a CUDA device keeps its pairs
// there, and its host copy defers them (PairRows::deferred): the first host
// read of either side fetches both, and a training step that runs on the
// device reads neither. Downloading every map as it was built cost a fifth of
// a 100k-point MinkUNet18 step on an H200 (docs/performance.md, session 28).
//
// Reads are safe from many threads (std::call_once). The fetch runs on the
// reading thread's current stream, like any op on the device map. Writes are
// for a map's builder, before the map is shared: a deferred side is fetched
// into the map's own array first.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <utility>

#include "minkowski/coords/large_array.h"

namespace minkowski {

// Both sides of a map's pairs, fetched together on the first read of either.
class DeferredPairs {
 public:
  using Fetch = std::function<void(LargeArray<int32_t>& in, LargeArray<int32_t>& out)>;
  explicit DeferredPairs(Fetch fetch) : fetch_(std::move(fetch)) {}
  const LargeArray<int32_t>& side(bool out_side) {
    std::call_once(once_, [this] {
      fetch_(in_, out_);
      fetched_.store(true, std::memory_order_release);
      fetch_ = nullptr;
    });
    return out_side ? out_ : in_;
  }
  bool fetched() const { return fetched_.load(std::memory_order_acquire); }

 private:
  Fetch fetch_;
  std::once_flag once_;
  std::atomic<bool> fetched_{false};
  LargeArray<int32_t> in_, out_;
};

class PairRows {
 public:
  PairRows() = default;
  PairRows(std::initializer_list<int32_t> rows) : own_(rows) {}
  PairRows& operator=(std::initializer_list<int32_t> rows) {
    deferred_.reset();
    own_.assign(rows);
    return *this;
  }
  // Side `out_side` of `pairs`, fetched on the first read.
  static PairRows deferred(std::shared_ptr<DeferredPairs> pairs, bool out_side) {
    PairRows r;
    r.deferred_ = std::move(pairs);
    r.out_side_ = out_side;
    return r;
  }
  // Whether these rows still wait on the device (no host read yet).
  bool pending() const { return deferred_ && !deferred_->fetched(); }

  const LargeArray<int32_t>& rows() const { return deferred_ ? deferred_->side(out_side_) : own_; }
  const int32_t& operator[](size_t p) const { return rows()[p]; }
  const int32_t* data() const { return rows().data(); }
  auto begin() const { return rows().begin(); }
  auto end() const { return rows().end(); }
  size_t size() const { return rows().size(); }
  friend bool operator==(const PairRows& a, const PairRows& b) { return a.rows() == b.rows(); }
  // Host elements held: none while pending.
  size_t capacity() const { return pending() ? 0 : rows().capacity(); }

  LargeArray<int32_t>& mutable_rows() {
    if (deferred_) {
      own_.assign(deferred_->side(out_side_).begin(), deferred_->side(out_side_).end());
      deferred_.reset();
    }
    return own_;
  }
  int32_t* data() { return mutable_rows().data(); }
  void resize(size_t n) { mutable_rows().resize(n); }
  void push_back(int32_t row) { mutable_rows().push_back(row); }
  template <typename It>
  void assign(It first, It last) {
    mutable_rows().assign(first, last);
  }

 private:
  LargeArray<int32_t> own_;
  std::shared_ptr<DeferredPairs> deferred_;
  bool out_side_ = false;
};

}  // namespace minkowski
