#pragma once
// Tests change fk's thread count through this scope, not by hand: a failed
// ASSERT_* returns early and must not leave the count changed for later tests.
#include "fk/parallel.h"

namespace fk::test {

// Sets the count to n; the destructor restores the count found here.
class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(get_num_threads()) { set_num_threads(n); }
  ~ThreadCount() { set_num_threads(saved_); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;

  // Changes the count within the scope (e.g. per loop iteration).
  void set(int n) const { set_num_threads(n); }
  // The count found at construction.
  int saved() const { return saved_; }

 private:
  int saved_;
};

}  // namespace fk::test
