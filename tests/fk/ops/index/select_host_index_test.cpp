// index_select's host-index form (a std::vector<int64_t> index, checked on
// the host and uploaded): the same values as a written-out loop and as the
// tensor-index form, bitwise; its gradient equals the written-out adjoint
// (each target row adds its selections in ascending index order) and the
// tensor form's, bitwise; a value out of range is refused on the host by
// name. The device side (no host read, forward or backward, under
// FK_SYNC_DEBUG=error in a device step) is tests/fk/cuda/index_host_index_device_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../test_util.h"
#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/index/select.h"
#include "fk/ops/reduce.h"
#include "helpers.h"

namespace fk {
namespace {

using index_test::at3;
using index_test::idx64;

const std::vector<int64_t> kRows = {2, 0, 2, 1, 2};  // repeated, out of order

TEST(IndexSelectHostIndex, ValuesEqualALoopAndTheTensorIndexForm) {
  const Tensor t = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 3);
  const std::vector<double> tv = t.to_vector<double>();
  for (int d = 0; d < 3; ++d) {
    SCOPED_TRACE("dim " + std::to_string(d));
    const Tensor out = index_select(t, d, kRows);
    Dims s = t.shape();
    s[d] = static_cast<int64_t>(kRows.size());
    ASSERT_EQ(out.shape(), s);
    std::vector<double> want;
    for (int64_t i = 0; i < s[0]; ++i)
      for (int64_t j = 0; j < s[1]; ++j)
        for (int64_t k = 0; k < s[2]; ++k) {
          int64_t c[3] = {i, j, k};
          c[d] = kRows[c[d]];
          want.push_back(tv[at3(t.shape(), c[0], c[1], c[2])]);
        }
    EXPECT_EQ(out.to_vector<double>(), want);
    const Tensor by_tensor = index_select(t, d, idx64(kRows, {5}));
    EXPECT_EQ(out.to_vector<double>(), by_tensor.to_vector<double>());
  }
  // An empty index selects nothing; a negative dim counts from the end.
  EXPECT_EQ(index_select(t, -1, std::vector<int64_t>{}).shape(), (Dims{3, 4, 0}));
}

TEST(IndexSelectHostIndex, GradientEqualsTheWrittenOutAdjointAndTheTensorForm) {
  for (DType dt : {DType::F32, DType::F64}) {
    SCOPED_TRACE(name(dt));
    const Tensor base = test::random_tensor({4, 3}, dt, -1, 1, 5);
    const Tensor w = test::random_tensor({5, 3}, dt, -1, 1, 6);
    auto grad_of = [&](bool host_index) {
      Tensor t = base.clone().detach();
      t.set_requires_grad(true);
      const Tensor out =
          host_index ? index_select(t, 0, kRows) : index_select(t, 0, idx64(kRows, {5}));
      sum(mul(out, w)).backward();
      return t.grad().to_vector<double>();
    };
    // grad[r, c] = sum of w[k, c] over the k with kRows[k] == r, k ascending.
    const std::vector<double> wv = w.to_vector<double>();
    std::vector<double> want(12, 0.0);
    for (size_t k = 0; k < kRows.size(); ++k)
      for (int64_t c = 0; c < 3; ++c) {
        const size_t at = static_cast<size_t>(kRows[k] * 3 + c);
        if (dt == DType::F32)
          want[at] =
              static_cast<float>(static_cast<float>(want[at]) + static_cast<float>(wv[k * 3 + c]));
        else
          want[at] += wv[k * 3 + c];
      }
    const std::vector<double> got = grad_of(true);
    EXPECT_EQ(got, want);
    EXPECT_EQ(got, grad_of(false));
  }
}

TEST(IndexSelectHostIndex, OutOfRangeValuesAreRefusedOnTheHost) {
  const Tensor t = zeros({2, 4}, {DType::F32});
  std::string msg = test::error_of([&] { index_select(t, 1, std::vector<int64_t>{1, 3, 4}); });
  EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 4 at flat position 2"), std::string::npos) << msg;
  msg = test::error_of([&] { index_select(t, 0, std::vector<int64_t>{-1}); });
  EXPECT_NE(msg.find("index -1 at flat position 0"), std::string::npos) << msg;
  msg = test::error_of([&] { index_select(full({}, 1.0), 0, std::vector<int64_t>{0}); });
  EXPECT_NE(msg.find("at least 1 dimension"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fk
