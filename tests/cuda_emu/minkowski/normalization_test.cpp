// normalization.cu's kernels run on the emulated device (emulated_device.h),
// f32 and f64 features, in both thread orders, bit for bit (the kernels sum
// in the CPU's order without contracting products into adds):
// - the blocked sums of each term and their block combination against a
//   plain loop, at block sizes that leave the last block (and the last
//   thread block) partial, with a segment no row falls in and with one
//   implicit segment (a null seg);
// - the same chain at normalization.cpp's 1024-row blocks against
//   normalize_statistics' mean and variance and normalize_backward's weight
//   and bias gradients on the CPU;
// - the elementwise pass against a plain loop of its formula, and, fed the
//   coefficients normalization.cpp forms, against normalize_forward and
//   normalize_backward's input gradient on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/factory.h"
#include "fk/tensor.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/normalization.h"

// The emulated launchers this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace minkowski::cuda::emu {
template <typename T>
void launch_segment_sums(int kind, const T* x, const T* g, int64_t n, int64_t cols,
                         const int32_t* seg, int64_t segments, int64_t block_rows,
                         const double* mean, const double* invstd, double* part, void* stream);
void launch_sum_blocks(const double* part, int64_t blocks, int64_t width, double* out,
                       void* stream);
template <typename T>
void launch_segment_affine(const T* x, const T* g, int64_t n, int64_t cols, const int32_t* seg,
                           const T* coef, int64_t coef_stride, T* y, void* stream);
}  // namespace minkowski::cuda::emu

namespace mc = minkowski::cuda;

using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::order_name;
using fkemu_test::random_values;

namespace {

// normalization.cpp's rows per block of the statistics' partial sums.
constexpr int64_t kCpuBlockRows = 1024;
enum Kind { kValue = 0, kSquaredDeviation = 1, kGradAndGradXhat = 2 };

// n rows in `count` segments at random, none in segment `skipped` (-1: none skipped).
minkowski::Segments random_segments(int64_t n, int64_t count, int64_t skipped, std::mt19937& rng) {
  minkowski::Segments s;
  s.count = count;
  while (static_cast<int64_t>(s.of_row.size()) < n) {
    const int32_t r = static_cast<int32_t>(rng() % static_cast<uint64_t>(count));
    if (r != skipped) s.of_row.push_back(r);
  }
  return s;
}

// The kernel's operands: features x (and g), segments (null: one), the
// statistics a term reads.
template <typename T>
struct Operands {
  int64_t n = 0, cols = 0, segments = 1;
  std::vector<T> x, g;
  std::vector<int32_t> seg;  // empty: the null seg of a single segment
  std::vector<double> mean, invstd;
  const int32_t* seg_or_null() const { return seg.empty() ? nullptr : seg.data(); }
  int32_t segment_of(int64_t i) const { return seg.empty() ? 0 : seg[static_cast<size_t>(i)]; }
};

template <typename T>
Operands<T> random_operands(int64_t n, int64_t cols, const minkowski::Segments* seg,
                            uint32_t seed) {
  std::mt19937 rng(seed);
  Operands<T> o;
  o.n = n;
  o.cols = cols;
  if (seg != nullptr) {
    o.segments = seg->count;
    o.seg = seg->of_row;
  }
  // Values around 3 (a mean well away from 0, as the centring is meant for).
  o.x = random_values<T>(n * cols, 1, 5, rng);
  o.g = random_values<T>(n * cols, -1, 1, rng);
  o.mean = random_values<double>(o.segments * cols, 2.5, 3.5, rng);
  o.invstd = random_values<double>(o.segments * cols, 0.5, 2, rng);
  return o;
}

int64_t terms_of(int kind) {
  return kind == kGradAndGradXhat ? 2 : 1;
}

// The blocked sums as kernels.h states them, in a plain loop.
template <typename T>
std::vector<double> host_partials(int kind, const Operands<T>& o, int64_t block_rows) {
  const int64_t blocks = (o.n + block_rows - 1) / block_rows, plane = o.segments * o.cols;
  const int64_t width = terms_of(kind) * plane;
  std::vector<double> part(static_cast<size_t>(blocks * width), 0.0);
  for (int64_t i = 0; i < o.n; ++i)
    for (int64_t c = 0; c < o.cols; ++c) {
      const size_t s = static_cast<size_t>(o.segment_of(i) * o.cols + c);
      double* p = part.data() + (i / block_rows) * width;
      const double v = static_cast<double>(o.x[static_cast<size_t>(i * o.cols + c)]);
      if (kind == kValue) {
        p[s] += v;
      } else if (kind == kSquaredDeviation) {
        const double d = v - o.mean[s];
        p[s] += d * d;
      } else {
        const double gv = static_cast<double>(o.g[static_cast<size_t>(i * o.cols + c)]);
        p[s] += gv;
        p[static_cast<size_t>(plane) + s] += gv * ((v - o.mean[s]) * o.invstd[s]);
      }
    }
  return part;
}

std::vector<double> host_block_sum(const std::vector<double>& part, int64_t blocks, int64_t width) {
  std::vector<double> out(static_cast<size_t>(width), 0.0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < width; ++j)
      out[static_cast<size_t>(j)] += part[static_cast<size_t>(b * width + j)];
  return out;
}

// launch_segment_sums into zeroed partials.
template <typename T>
std::vector<double> device_partials(int kind, const Operands<T>& o, int64_t block_rows) {
  const int64_t blocks = (o.n + block_rows - 1) / block_rows;
  std::vector<double> part(static_cast<size_t>(blocks * terms_of(kind) * o.segments * o.cols), 0.0);
  mc::emu::launch_segment_sums<T>(
      kind, o.x.data(), kind == kGradAndGradXhat ? o.g.data() : nullptr, o.n, o.cols,
      o.seg_or_null(), o.segments, block_rows, kind == kValue ? nullptr : o.mean.data(),
      kind == kGradAndGradXhat ? o.invstd.data() : nullptr, part.data(), nullptr);
  return part;
}

// Partials, then launch_sum_blocks into a poisoned output (every entry written).
template <typename T>
std::vector<double> device_sums(int kind, const Operands<T>& o, int64_t block_rows) {
  const int64_t blocks = (o.n + block_rows - 1) / block_rows;
  const int64_t width = terms_of(kind) * o.segments * o.cols;
  const std::vector<double> part = device_partials(kind, o, block_rows);
  std::vector<double> out(static_cast<size_t>(width), NAN);
  mc::emu::launch_sum_blocks(part.data(), blocks, width, out.data(), nullptr);
  return out;
}

template <typename T>
void check_sums(const Operands<T>& o, int64_t block_rows) {
  const int64_t blocks = (o.n + block_rows - 1) / block_rows;
  const std::string what = std::to_string(o.n) + " rows in blocks of " +
                           std::to_string(block_rows) + ", " + std::to_string(o.cols) +
                           " channels, " + std::to_string(o.segments) + " segments";
  in_both_orders([&](fkemu::Order order) {
    for (int kind : {kValue, kSquaredDeviation, kGradAndGradXhat}) {
      const std::string when =
          what + ", kind " + std::to_string(kind) + " (" + order_name(order) + ")";
      const std::vector<double> want = host_partials(kind, o, block_rows);
      expect_same_bits(device_partials(kind, o, block_rows), want, "partials, " + when);
      const int64_t width = terms_of(kind) * o.segments * o.cols;
      expect_same_bits(device_sums(kind, o, block_rows), host_block_sum(want, blocks, width),
                       "sums, " + when);
    }
  });
}

TEST(EmulatedNormalization, BlockedSumsMatchAPlainLoop) {
  std::mt19937 rng(1);
  const minkowski::Segments four = random_segments(1000, 4, 2, rng);  // segment 2 has no rows
  const auto f = random_operands<float>(1000, 2, &four, 2);
  check_sums(f, 3);     // 334 blocks (the last of one row) x 2 channels: 668 threads
  check_sums(f, 1000);  // one block
  check_sums(random_operands<double>(1000, 2, &four, 3), 7);
  // One implicit segment (seg null).
  check_sums(random_operands<float>(500, 3, nullptr, 4), 64);
  check_sums(random_operands<double>(500, 3, nullptr, 5), 11);
  // 50 segments x 3 channels x 2 terms: 300 block-sum threads.
  const minkowski::Segments fifty = random_segments(400, 50, -1, rng);
  check_sums(random_operands<double>(400, 3, &fifty, 6), 9);
}

TEST(EmulatedNormalization, NoRowsGiveZeroSums) {
  in_both_orders([&](fkemu::Order order) {
    const auto o = random_operands<float>(0, 3, nullptr, 7);
    for (int kind : {kValue, kSquaredDeviation, kGradAndGradXhat})
      EXPECT_EQ(device_sums(kind, o, kCpuBlockRows),
                std::vector<double>(static_cast<size_t>(terms_of(kind) * 3), 0.0))
          << "kind " << kind << " (" << order_name(order) << ")";
  });
}

template <typename T>
fk::Tensor tensor_of(const std::vector<T>& v, int64_t rows, int64_t cols) {
  return fk::from_vector(v, fk::Dims{rows, cols});
}

// The statistics as normalization.cpp's device path forms them from the
// kernels' sums (1024-row blocks), against normalize_statistics on the CPU.
template <typename T>
void check_statistics(const Operands<T>& o, const minkowski::Segments& seg) {
  const double eps = 1e-5;
  const minkowski::NormStats want =
      minkowski::normalize_statistics(tensor_of(o.x, o.n, o.cols), seg, eps);
  in_both_orders([&](fkemu::Order order) {
    Operands<T> d = o;
    d.mean = device_sums(kValue, d, kCpuBlockRows);
    for (size_t k = 0; k < d.mean.size(); ++k)
      d.mean[k] /= static_cast<double>(want.rows[k / static_cast<size_t>(o.cols)]);
    std::vector<double> var = device_sums(kSquaredDeviation, d, kCpuBlockRows);
    for (size_t k = 0; k < var.size(); ++k)
      var[k] /= static_cast<double>(want.rows[k / static_cast<size_t>(o.cols)]);
    const std::string when = std::to_string(o.n) + " rows, " + std::to_string(o.segments) +
                             " segments (" + order_name(order) + ")";
    expect_same_bits(d.mean, want.mean, "mean, " + when);
    expect_same_bits(var, want.var, "variance, " + when);
  });
}

TEST(EmulatedNormalization, StatisticsAreNormalizeStatisticsBitForBit) {
  std::mt19937 rng(8);
  // 2500 rows: three 1024-row blocks, the last partial.
  const minkowski::Segments three = random_segments(2500, 3, -1, rng);
  check_statistics(random_operands<float>(2500, 3, &three, 9), three);
  check_statistics(random_operands<double>(2500, 3, &three, 10), three);
  const minkowski::Segments one = minkowski::single_segment(2100);
  check_statistics(random_operands<float>(2100, 2, nullptr, 11), one);
  check_statistics(random_operands<double>(2100, 2, nullptr, 12), one);
}

// The elementwise pass as kernels.h states it, in a plain loop in T.
template <typename T>
std::vector<T> host_affine(const Operands<T>& o, bool gradient, const std::vector<T>& coef) {
  const size_t stride = static_cast<size_t>(o.segments * o.cols);
  std::vector<T> y(static_cast<size_t>(o.n * o.cols));
  for (int64_t i = 0; i < o.n; ++i)
    for (int64_t c = 0; c < o.cols; ++c) {
      const size_t t = static_cast<size_t>(i * o.cols + c);
      const size_t k = static_cast<size_t>(o.segment_of(i) * o.cols + c);
      const T m = coef[k], r = coef[stride + k], s = coef[2 * stride + k], u = coef[3 * stride + k];
      if (!gradient)
        y[t] = (o.x[t] - m - r) * s + u;
      else
        y[t] = o.g[t] * s - (o.x[t] - m - r) * u - coef[4 * stride + k];
    }
  return y;
}

// launch_segment_affine into a poisoned output (every element written).
template <typename T>
std::vector<T> device_affine(const Operands<T>& o, bool gradient, const std::vector<T>& coef) {
  std::vector<T> y(static_cast<size_t>(o.n * o.cols), static_cast<T>(NAN));
  mc::emu::launch_segment_affine<T>(o.x.data(), gradient ? o.g.data() : nullptr, o.n, o.cols,
                                    o.seg_or_null(), coef.data(), o.segments * o.cols, y.data(),
                                    nullptr);
  return y;
}

template <typename T>
void check_affine(const Operands<T>& o, uint32_t seed) {
  std::mt19937 rng(seed);
  // Rows m (near the features), r (small), s, u, v.
  const int64_t sc = o.segments * o.cols;
  std::vector<T> coef = random_values<T>(sc, 2.5, 3.5, rng);
  for (double scale : {1e-6, 2.0, 1.0, 0.5}) {
    const std::vector<T> row = random_values<T>(sc, -scale, scale, rng);
    coef.insert(coef.end(), row.begin(), row.end());
  }
  in_both_orders([&](fkemu::Order order) {
    const std::string when = std::to_string(o.n) + " x " + std::to_string(o.cols) + ", " +
                             std::to_string(o.segments) + " segments (" + order_name(order) + ")";
    expect_same_bits(device_affine(o, false, coef), host_affine(o, false, coef),
                     "forward, " + when);
    expect_same_bits(device_affine(o, true, coef), host_affine(o, true, coef), "gradient, " + when);
  });
}

TEST(EmulatedNormalization, AffinePassMatchesAPlainLoop) {
  std::mt19937 rng(13);
  const minkowski::Segments five = random_segments(301, 5, 1, rng);
  check_affine(random_operands<float>(301, 3, &five, 14), 15);  // 903 threads
  check_affine(random_operands<double>(301, 3, &five, 16), 17);
  check_affine(random_operands<float>(129, 2, nullptr, 18), 19);  // 258: two threads past a block
  check_affine(random_operands<double>(1, 1, nullptr, 20), 21);
}

// normalization.cpp's coefficient rows for the elementwise pass: the mean
// split into T's nearest value and the rest, then the forward's scale and
// shift, or the gradient's s, u and v from the kind-2 sums.
template <typename T>
std::vector<T> forward_coefficients(const minkowski::NormStats& st, const std::vector<double>& w,
                                    const std::vector<double>& b) {
  const size_t sc = st.mean.size(), c = w.size();
  std::vector<T> coef(4 * sc);
  for (size_t k = 0; k < sc; ++k) {
    coef[k] = static_cast<T>(st.mean[k]);
    coef[sc + k] = static_cast<T>(st.mean[k] - static_cast<double>(coef[k]));
    coef[2 * sc + k] = static_cast<T>(st.invstd[k] * w[k % c]);
    coef[3 * sc + k] = static_cast<T>(b[k % c]);
  }
  return coef;
}
template <typename T>
std::vector<T> gradient_coefficients(const minkowski::NormStats& st, const std::vector<double>& w,
                                     const std::vector<double>& sums) {
  const size_t sc = st.mean.size(), c = w.size();
  std::vector<T> coef(5 * sc);
  for (size_t k = 0; k < sc; ++k) {
    const double a = w[k % c] * st.invstd[k], inv_n = 1.0 / static_cast<double>(st.rows[k / c]);
    coef[k] = static_cast<T>(st.mean[k]);
    coef[sc + k] = static_cast<T>(st.mean[k] - static_cast<double>(coef[k]));
    coef[2 * sc + k] = static_cast<T>(a);
    coef[3 * sc + k] = static_cast<T>(a * st.invstd[k] * sums[sc + k] * inv_n);
    coef[4 * sc + k] = static_cast<T>(a * sums[k] * inv_n);
  }
  return coef;
}

// The forward and the whole backward (batch statistics) of
// normalization.cpp's device path against normalize_forward and
// normalize_backward on the CPU.
template <typename T>
void check_normalize(const Operands<T>& o, const minkowski::Segments& seg, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t c = o.cols;
  const std::vector<T> weight = random_values<T>(c, 0.5, 2, rng),
                       bias = random_values<T>(c, -1, 1, rng);
  const fk::Tensor xt = tensor_of(o.x, o.n, c), gt = tensor_of(o.g, o.n, c);
  const fk::Tensor wt = fk::from_vector(weight, fk::Dims{c});
  const fk::Tensor bt = fk::from_vector(bias, fk::Dims{c});
  const minkowski::NormStats st = minkowski::normalize_statistics(xt, seg, 1e-5);
  const std::vector<T> want_y =
      minkowski::normalize_forward(xt, seg, st, wt, bt).template to_vector<T>();
  const minkowski::NormGrads want =
      minkowski::normalize_backward(gt, xt, seg, st, wt, true, true, true, true);
  const std::vector<double> w(weight.begin(), weight.end()), b(bias.begin(), bias.end());

  Operands<T> d = o;
  d.mean = st.mean;
  d.invstd = st.invstd;
  in_both_orders([&](fkemu::Order order) {
    const std::string when = std::to_string(o.n) + " rows, " + std::to_string(o.segments) +
                             " segments (" + order_name(order) + ")";
    expect_same_bits(device_affine(d, false, forward_coefficients<T>(st, w, b)), want_y,
                     "forward, " + when);
    const std::vector<double> sums = device_sums(kGradAndGradXhat, d, kCpuBlockRows);
    // The parameters' gradients: the segments' sums added on the host, in the weight's dtype.
    std::vector<double> dw(static_cast<size_t>(c), 0.0), db(static_cast<size_t>(c), 0.0);
    for (int64_t s = 0; s < o.segments; ++s)
      for (int64_t ch = 0; ch < c; ++ch) {
        db[static_cast<size_t>(ch)] += sums[static_cast<size_t>(s * c + ch)];
        dw[static_cast<size_t>(ch)] += sums[static_cast<size_t>((o.segments + s) * c + ch)];
      }
    expect_same_bits(std::vector<T>(dw.begin(), dw.end()), want.weight.template to_vector<T>(),
                     "weight gradient, " + when);
    expect_same_bits(std::vector<T>(db.begin(), db.end()), want.bias.template to_vector<T>(),
                     "bias gradient, " + when);
    expect_same_bits(device_affine(d, true, gradient_coefficients<T>(st, w, sums)),
                     want.x.template to_vector<T>(), "input gradient, " + when);
  });
}

TEST(EmulatedNormalization, ForwardAndBackwardAreTheCpusBitForBit) {
  std::mt19937 rng(22);
  const minkowski::Segments three = random_segments(1300, 3, -1, rng);
  check_normalize(random_operands<float>(1300, 3, &three, 23), three, 24);
  check_normalize(random_operands<double>(1300, 3, &three, 25), three, 26);
  // BatchNorm's single segment: seg null on the device.
  const minkowski::Segments one = minkowski::single_segment(1100);
  check_normalize(random_operands<float>(1100, 2, nullptr, 27), one, 28);
  check_normalize(random_operands<double>(1100, 2, nullptr, 29), one, 30);
}

}  // namespace
