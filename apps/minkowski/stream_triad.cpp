#include "stream_triad.h"

#include <omp.h>

#include <algorithm>
#include <chrono>

namespace minkowski_app {

StreamTriad::StreamTriad(int64_t array_mib)
    : n_(std::max<int64_t>(1, array_mib) * (int64_t{1} << 20) / 8),
      a_(new double[n_]),
      b_(new double[n_]),
      c_(new double[n_]) {
  std::fill(a_.get(), a_.get() + n_, 0.0);
  std::fill(b_.get(), b_.get() + n_, 1.0);
  std::fill(c_.get(), c_.get() + n_, 2.0);
}

double StreamTriad::pass(int threads) {
  double* a = a_.get();
  const double* b = b_.get();
  const double* c = c_.get();
  const int64_t n = n_;
  const double s = 3.0;
  auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(std::max(1, threads))
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t lo = n * t / nt, hi = n * (t + 1) / nt;
    for (int64_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 24.0 * static_cast<double>(n) / sec;
}

}  // namespace minkowski_app
