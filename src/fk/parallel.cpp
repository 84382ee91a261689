#include "fk/parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "fk/blas.h"
#include "fk/error.h"
#include "fk/knobs.h"

namespace fk {
namespace {

Knob kOmpNumThreads("OMP_NUM_THREADS", KnobType::Int, "0",
                    "CPU threads of fk's parallel loops and BLAS (0 = one per core); "
                    "fk::set_num_threads overrides it",
                    KnobRead::Latched);

int initial_threads() {
  int64_t n = kOmpNumThreads.as_int();
  FK_CHECK(n >= 0 && n <= 4096, "knob OMP_NUM_THREADS", "a thread count in [0, 4096]",
           std::to_string(n));
  return n > 0 ? static_cast<int>(n) : std::max(1, omp_get_num_procs());
}
std::atomic<int>& thread_count() {
  static std::atomic<int> n{initial_threads()};
  return n;
}
}  // namespace

void set_num_threads(int n) {
  // Beyond this a pool of threads only exhausts the process (OMP_NUM_THREADS
  // has the same bound).
  FK_CHECK(n <= 4096, "fk::set_num_threads", "a thread count up to 4096", std::to_string(n));
  n = std::max(1, n);
  thread_count().store(n);
  omp_set_num_threads(n);
  blas_set_num_threads(n);
}

int get_num_threads() {
  return thread_count().load(std::memory_order_relaxed);
}

}  // namespace fk
