#pragma once
// The CUDA parity harness (in the spirit of ggml's test-backend-ops): a table
// of OpCase rows per op family, in files named after the CPU tests
// (unary_parity_test.cpp, binary_, copy_, join_, reduce_, reduce_ops_, index_,
// index_ops_, linalg_, fft_), each row run in each of its dtypes as one test,
// <Family>/CudaParity.MatchesCpu/<row>_<dtype>. A row runs its op on the
// device and its reference on the CPU from the same inputs and compares:
//   - values, within the row's tolerance (default by dtype) or bit for bit;
//   - with `grad`, the gradients of every inexact input of
//     sum(y * w) (sum(|y| * w) for complex y), w fixed weights, on both devices;
//   - with `gradcheck`, fk::testing::gradcheck on the device (f64/c128 rows):
//     autograd's device gradients against central differences of the device op;
//   - with `deterministic`, a second device run gives the same bits.
// A row's op is either an fk op (the same function on both devices) or a CUDA
// launcher called on device tensors, with fk's CPU op or a plain loop as the
// reference. A new family is also named in tests/CMakeLists.txt's
// FK_CUDA_PARITY_FAMILIES (one ctest entry per family). Every test skips
// itself where no CUDA device is usable (CPU-only builds, machines without a
// driver); scripts/gpu-check runs them on a GPU and counts a skip there as a
// failure.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "fk/cuda/runtime.h"
#include "fk/fk.h"

namespace fk::cuda_parity {

#define FK_SKIP_WITHOUT_GPU()                                                      \
  do {                                                                             \
    if (::fk::cuda::device_count() == 0)                                           \
      GTEST_SKIP() << "no usable CUDA device: " << ::fk::cuda::no_device_reason(); \
  } while (0)

inline constexpr int kDev = 0;
inline const Device kGpu = cuda_device(kDev);

// |got - want| <= atol + rtol |want| elementwise.
struct Tol {
  double rtol, atol;
};
// The default tolerance of a dtype (both devices rounding once per op).
Tol tol_for(DType t);
// tol relative to 1 + |want|.
inline Tol near(double tol) {
  return {tol, tol};
}

// got (any device) against want: same shape; NaN where want is NaN, the same
// infinity where want is infinite, else within tol; complex part by part. The
// first few mismatches are named.
void expect_close(const Tensor& got, const Tensor& want, Tol tol, const std::string& what);
// The same bytes (dtypes, shapes and values; any devices).
bool bitwise_equal(const Tensor& a, const Tensor& b);

// Uniform values in [lo, hi) of any dtype (complex: both parts; bool: true
// above the middle), on the CPU.
Tensor random_of(const Dims& shape, DType dtype, double lo, double hi, unsigned seed);
// A tensor argument made on the CPU, moved to the device x is on.
inline Tensor like(const Tensor& host, const Tensor& x) {
  return host.to(x.device());
}
inline Tensor i64s(const std::vector<int64_t>& v, const Dims& shape) {
  return from_vector(v, shape);
}

// For launcher rows: the dtype code, the current stream, an output on the device.
inline int code(DType t) {
  return static_cast<int>(t);
}
inline void* stream() {
  return cuda::current_stream(kDev);
}
inline Tensor device_empty(const Dims& shape, DType dtype) {
  return empty(shape, {dtype, kGpu});
}

using Inputs = std::vector<Tensor>;
using Fn = std::function<Tensor(const Inputs&)>;

struct OpCase {
  std::string name;  // letters, digits and '_': part of the test's name
  std::vector<DType> dtypes;
  std::function<Inputs(DType)> inputs;      // on the CPU; moved to the device for `device`
  Fn device;                                // on device tensors, returns a device tensor
  Fn reference = nullptr;                   // on CPU tensors; empty: `device`'s function
  std::function<Tol(DType)> tol = nullptr;  // empty: tol_for(dtype)
  bool bitwise = false;
  bool grad = false;
  bool gradcheck = false;
  bool deterministic = false;
};

// A row in one dtype: the parameter of CudaParity.MatchesCpu.
struct OpRun {
  std::shared_ptr<const OpCase> row;
  DType dtype;
  std::string family;
};

// gtest prints a failing run by its row and dtype.
void PrintTo(const OpRun& run, std::ostream* os);

// One run per row and dtype, for INSTANTIATE_TEST_SUITE_P.
std::vector<OpRun> runs(const std::string& family, std::vector<OpCase> rows);
std::string run_name(const ::testing::TestParamInfo<OpRun>& info);

class CudaParity : public ::testing::TestWithParam<OpRun> {};

#define FK_PARITY_TABLE(family, rows) \
  INSTANTIATE_TEST_SUITE_P(family, CudaParity, ::testing::ValuesIn(runs(#family, (rows))), run_name)

}  // namespace fk::cuda_parity
