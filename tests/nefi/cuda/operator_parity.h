#pragma once
// An operator's output and input gradient on the device against its CPU
// path: the same input and output cotangent, cast to one dtype, applied and
// back-propagated on the CPU and on kGpu, the results compared on the host
// by the test's own check (bitwise or to a tolerance).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "fk/tensor.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/operators/operator.h"

namespace nefi::cuda_test {

// compare(device values, CPU values, "output" or "input gradient").
using HostCompare = std::function<void(const std::vector<double>& got,
                                       const std::vector<double>& want, const std::string& what)>;

// Bitwise (the sign of a zero and a NaN's payload included, which == would
// not see): the device kernels repeat the CPU loops' operations. At most
// five differences reported.
inline void expect_same_values(const std::vector<double>& got, const std::vector<double>& want,
                               const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(double)) != 0 && wrong++ < 5)
      ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
  EXPECT_EQ(wrong, 0) << what << ": values differing from the CPU's in their bits";
}

// The two outputs compared, for a test's further checks (a second apply from
// a cache or a warm start against them).
struct ParityOutputs {
  std::vector<double> device, cpu;
};

// To tol relative to the largest CPU value (expect_close).
inline HostCompare close_within(double tol) {
  return [tol](const std::vector<double>& got, const std::vector<double>& want,
               const std::string& what) { expect_close(got, want, tol, what); };
}

// x and g (CPU) cast to dt; op.apply on the CPU and on kGpu, each backward of
// g; the device output must be on kGpu in dt and the CPU output's shape, the
// device input gradient on kGpu in dt. The outputs go to *outputs if given.
inline void expect_device_matches_cpu(const nefi::Operator& op, const fk::Tensor& x,
                                      const fk::Tensor& g, fk::DType dt, const HostCompare& compare,
                                      ParityOutputs* outputs = nullptr) {
  // Fresh leaves: x.to(dt) is x itself when x is already dt, and marking it
  // would mark the caller's x, whose next conversion (the next dtype of a
  // loop) is then recorded, not a leaf, and set_requires_grad throws.
  fk::Tensor xc = x.detach().to(dt), xd = x.detach().to(dt).to(kGpu);
  xc.set_requires_grad(true);
  xd.set_requires_grad(true);
  const fk::Tensor yc = op.apply(xc), yd = op.apply(xd);
  ASSERT_EQ(yd.device(), kGpu);
  ASSERT_EQ(yd.shape(), yc.shape());
  ASSERT_EQ(yd.dtype(), dt);
  ParityOutputs y{host(yd), host(yc)};
  compare(y.device, y.cpu, "output");
  if (outputs != nullptr) *outputs = std::move(y);
  yc.backward(g.to(dt));
  yd.backward(g.to(dt).to(kGpu));
  ASSERT_EQ(xd.grad().device(), kGpu);
  ASSERT_EQ(xd.grad().dtype(), dt);
  compare(host(xd.grad()), host(xc.grad()), "input gradient");
}

}  // namespace nefi::cuda_test
