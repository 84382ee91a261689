#include "fk/parallel.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <string>

#include "fk/blas.h"
#include "fk/error.h"
#include "fk/knobs.h"

namespace fk {
namespace {

// A String knob: OpenMP's own syntax also takes a list, one count per
// nesting level ("4,2"); fk's loops do not nest, so the first count is theirs.
// Every entry is checked: libgomp ignores the whole variable when one is bad.
Knob kOmpNumThreads("OMP_NUM_THREADS", KnobType::String, "0",
                    "CPU threads of fk's parallel loops and BLAS (0 = one per core; of a "
                    "list such as 4,2 the first); fk::set_num_threads overrides it",
                    KnobRead::Latched);

int initial_threads() {
  const std::string text = kOmpNumThreads.as_string();
  long long first = -1;
  for (size_t start = 0;;) {
    const size_t comma = text.find(',', start);
    std::string entry = text.substr(start, comma - start);
    entry.erase(0, entry.find_first_not_of(" \t"));  // libgomp allows spaces
    entry.erase(entry.find_last_not_of(" \t") + 1);
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(entry.c_str(), &end, 10);
    // 0 (one per core) only as fk's own count; a nesting level's is >= 1.
    FK_CHECK(!entry.empty() && *end == '\0' && errno == 0 && n >= (first < 0 ? 0 : 1) && n <= 4096,
             "knob OMP_NUM_THREADS",
             "a thread count in [0, 4096], or a list of them whose first is fk's (the others "
             ">= 1)",
             "'" + text + "'");
    if (first < 0) first = n;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return first > 0 ? static_cast<int>(first) : std::max(1, omp_get_num_procs());
}
std::atomic<int>& thread_count() {
  static std::atomic<int> n{initial_threads()};
  return n;
}
}  // namespace

void set_num_threads(int n) {
  // Beyond this a pool of threads only exhausts the process (OMP_NUM_THREADS
  // has the same bound).
  FK_CHECK(n <= 4096, "fk::set_num_threads", "a thread count up to 4096", fk::to_text(n));
  n = std::max(1, n);
  thread_count().store(n);
  omp_set_num_threads(n);
  blas_set_num_threads(n);
}

int get_num_threads() {
  return thread_count().load(std::memory_order_relaxed);
}

}  // namespace fk
