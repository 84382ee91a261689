#pragma once
// Helpers shared by the tests of the feature-wise sparse ops (activation,
// normalization, prune, union, elementwise, interpolation, spmm): small random
// sparse tensors with negative coordinates in two batch items, a check that
// results are bitwise identical at 1, 2 and 3 threads, and error capture.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"
#include "minkowski/minkowski.h"
#include "minkowski/ops/conv_reference.h"

namespace minkowski::feature_ops {

using conv_ref::Rows;

struct Sparse {
  Rows rows;
  std::vector<double> f;  // n x c, row-major
  SparseTensor x;
};

// n distinct coordinates in [-range, range]^d (times ts), batches 0 and 1,
// features uniform in [-1, 1) (seeded), in `dtype`.
inline Sparse random_sparse(int d, int n, int c, unsigned seed, fk::DType dtype = fk::DType::F64,
                            std::shared_ptr<CoordinateManager> mgr = nullptr, int range = 3,
                            int ts = 1) {
  Sparse s;
  s.rows = conv_ref::random_rows(d, n, range, ts, 2, seed);
  s.f = fk::test::random_values(static_cast<int64_t>(n) * c, -1, 1, seed + 100);
  fk::Tensor f = fk::from_vector(s.f, fk::Dims{n, c}).to(dtype);
  s.x = SparseTensor(f, conv_ref::to_tensor(s.rows), {ts}, QuantizationMode::FirstOccurrence,
                     std::move(mgr));
  return s;
}

inline bool same_bits(const fk::Tensor& a, const fk::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  fk::Tensor ac = a.contiguous(), bc = b.contiguous();
  return a.nbytes() == 0 || std::memcmp(ac.data_ptr(), bc.data_ptr(), a.nbytes()) == 0;
}

// Runs fn at 1, 2 and 3 threads; every tensor it returns must match bit for bit.
inline void expect_thread_invariant(const std::function<std::vector<fk::Tensor>()>& fn) {
  const fk::test::ThreadCount threads(1);
  std::vector<fk::Tensor> ref = fn();
  for (int t : {2, 3}) {
    threads.set(t);
    std::vector<fk::Tensor> got = fn();
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i)
      EXPECT_TRUE(same_bits(ref[i], got[i])) << "result " << i << " at " << t << " threads";
  }
}

// The message of the fk::Error fn throws must contain every part.
inline void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  std::string m = fk::test::error_of(fn);
  ASSERT_FALSE(m.empty()) << "no fk::Error";
  for (const auto& p : parts) EXPECT_NE(m.find(p), std::string::npos) << m << "\nlacks: " << p;
}

// Tolerance of a 16-bit/f32 result against an f64 reference of magnitude ~1.
inline double tolerance(fk::DType t) {
  switch (t) {
    case fk::DType::F64:
      return 1e-12;
    case fk::DType::F32:
      return 1e-5;
    case fk::DType::F16:
      return 4e-3;  // 11-bit mantissa: half an ulp at 2 is ~1e-3, plus the input's rounding
    default:
      return 3e-2;  // bf16: 8-bit mantissa
  }
}

}  // namespace minkowski::feature_ops
