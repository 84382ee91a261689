#include "fk/parallel.h"

#include <atomic>
#include <cstdlib>

#include "fk/blas.h"

namespace fk {
namespace {
int initial_threads() {
  if (const char* s = std::getenv("OMP_NUM_THREADS")) {
    int n = std::atoi(s);
    if (n > 0) return n;
  }
  return std::max(1, omp_get_num_procs());
}
std::atomic<int>& thread_count() {
  static std::atomic<int> n{initial_threads()};
  return n;
}
}  // namespace

void set_num_threads(int n) {
  n = std::max(1, n);
  thread_count().store(n);
  omp_set_num_threads(n);
  blas_set_num_threads(n);
}

int get_num_threads() {
  return thread_count().load(std::memory_order_relaxed);
}

}  // namespace fk
