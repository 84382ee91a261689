// index_add's host-index form (a std::vector<int64_t> of rows, checked on the
// host and uploaded): the same values as a written-out loop (each target row
// adds its sources in ascending position, times alpha) and as the
// tensor-index form, bitwise; gradients for self and src pass a
// finite-difference check in f64 and equal the tensor form's; a row out of
// range is refused on the host by name. The device side is
// tests/fk/cuda/index_errors_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../test_util.h"
#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index/scatter.h"
#include "fk/ops/reduce.h"
#include "helpers.h"

namespace fk {
namespace {

using index_test::at3;
using index_test::idx64;

const std::vector<int64_t> kRows = {2, 0, 2, 3, 2};  // repeated, out of order

TEST(IndexAddHostIndex, ValuesEqualALoopAndTheTensorIndexForm) {
  const double alpha = 0.5;
  for (int d = 0; d < 3; ++d) {
    SCOPED_TRACE("dim " + std::to_string(d));
    const Dims self_shape{4, 4, 4};
    Dims src_shape = self_shape;
    src_shape[d] = static_cast<int64_t>(kRows.size());
    const Tensor self = test::random_tensor(self_shape, DType::F64, -1, 1, 21);
    const Tensor src = test::random_tensor(src_shape, DType::F64, -1, 1, 22);
    const std::vector<double> sv = src.to_vector<double>();
    std::vector<double> want = self.to_vector<double>();
    for (int64_t i = 0; i < src_shape[0]; ++i)
      for (int64_t j = 0; j < src_shape[1]; ++j)
        for (int64_t k = 0; k < src_shape[2]; ++k) {
          int64_t c[3] = {i, j, k};
          c[d] = kRows[static_cast<size_t>(c[d])];
          want[static_cast<size_t>(at3(self_shape, c[0], c[1], c[2]))] +=
              alpha * sv[static_cast<size_t>(at3(src_shape, i, j, k))];
        }
    const std::vector<double> got = index_add(self, d, kRows, src, alpha).to_vector<double>();
    ASSERT_EQ(got.size(), want.size());
    // The loop above adds in (i, j, k) order, which for one target is the
    // ascending source position the op uses: equal to rounding, compared
    // bitwise against the tensor form below.
    for (size_t e = 0; e < got.size(); ++e) EXPECT_NEAR(got[e], want[e], 1e-14) << "element " << e;
    const Tensor idx = idx64(kRows, {static_cast<int64_t>(kRows.size())});
    EXPECT_EQ(got, index_add(self, d, idx, src, alpha).to_vector<double>());
  }
}

TEST(IndexAddHostIndex, GradientsPassAFiniteDifferenceCheckAndEqualTheTensorForm) {
  const Tensor self = test::random_tensor({4, 3}, DType::F64, -1, 1, 31);
  const Tensor src = test::random_tensor({5, 3}, DType::F64, -1, 1, 32);
  EXPECT_GRADCHECK(
      [&](const std::vector<Tensor>& in) { return index_add(in[0], 0, kRows, in[1], -1.5); },
      (std::vector<Tensor>{self, src}));
  const Tensor w = test::random_tensor({4, 3}, DType::F64, -1, 1, 33);
  auto grads_of = [&](bool host_index) {
    Tensor a = self.clone().detach(), b = src.clone().detach();
    a.set_requires_grad(true);
    b.set_requires_grad(true);
    const Tensor out =
        host_index ? index_add(a, 0, kRows, b, -1.5) : index_add(a, 0, idx64(kRows, {5}), b, -1.5);
    sum(mul(out, w)).backward();
    std::vector<double> g = a.grad().to_vector<double>(), gb = b.grad().to_vector<double>();
    g.insert(g.end(), gb.begin(), gb.end());
    return g;
  };
  EXPECT_EQ(grads_of(true), grads_of(false));
}

TEST(IndexAddHostIndex, OutOfRangeRowsAreRefusedOnTheHost) {
  const Tensor self = zeros({4, 2}, {DType::F32});
  const Tensor src = ones({2, 2}, {DType::F32});
  std::string msg = test::error_of([&] { index_add(self, 0, std::vector<int64_t>{1, 4}, src); });
  EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 4 at flat position 1"), std::string::npos) << msg;
  msg = test::error_of([&] { index_add(self, 0, std::vector<int64_t>{-2, 0}, src); });
  EXPECT_NE(msg.find("index -2 at flat position 0"), std::string::npos) << msg;
  msg = test::error_of([&] { index_add(self, 0, std::vector<int64_t>{0, 1, 2}, src); });
  EXPECT_NE(msg.find("shapes that broadcast"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fk
