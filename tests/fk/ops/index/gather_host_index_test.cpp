// gather's host-index form (a std::vector<int64_t> index with its shape,
// checked on the host and uploaded): the same values as a written-out loop
// (take_along_axis, with broadcasting) and as the tensor-index form, bitwise;
// its gradient passes a finite-difference check in f64 and equals the tensor
// form's; a value out of range, or a count that does not fill the shape, is
// refused on the host by name. The device side is
// tests/fk/cuda/index_errors_test.cpp.
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

// 6 values in [0, 3), repeated and out of order, filling any shape of 6 or
// more elements cyclically.
std::vector<int64_t> index_values(int64_t n, int64_t bound) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = (i * 7 + 2) % bound;
  return v;
}

TEST(GatherHostIndex, ValuesEqualALoopAndTheTensorIndexForm) {
  const Tensor t = test::random_tensor({3, 4, 5}, DType::F64, -1, 1, 3);
  const std::vector<double> tv = t.to_vector<double>();
  for (int d = 0; d < 3; ++d) {
    for (bool broadcast : {false, true}) {
      SCOPED_TRACE("dim " + std::to_string(d) + (broadcast ? ", broadcast index" : ""));
      Dims is = t.shape();
      is[d] = 6;
      const int other = d == 0 ? 1 : 0;
      if (broadcast) is[other] = 1;  // the index broadcasts along `other`
      const std::vector<int64_t> iv = index_values(is.numel(), t.size(d));
      const Tensor out = gather(t, d, iv, is);
      Dims os = is;
      os[other] = t.size(other);
      ASSERT_EQ(out.shape(), os);
      std::vector<double> want;
      for (int64_t i = 0; i < os[0]; ++i)
        for (int64_t j = 0; j < os[1]; ++j)
          for (int64_t k = 0; k < os[2]; ++k) {
            int64_t c[3] = {i, j, k};
            int64_t ic[3] = {i, j, k};
            ic[other] = broadcast ? 0 : c[other];
            c[d] = iv[static_cast<size_t>(at3(is, ic[0], ic[1], ic[2]))];
            want.push_back(tv[static_cast<size_t>(at3(t.shape(), c[0], c[1], c[2]))]);
          }
      EXPECT_EQ(out.to_vector<double>(), want);
      EXPECT_EQ(out.to_vector<double>(), gather(t, d, idx64(iv, is)).to_vector<double>());
    }
  }
}

TEST(GatherHostIndex, GradientPassesAFiniteDifferenceCheckAndEqualsTheTensorForm) {
  const Dims is{4, 3};
  const std::vector<int64_t> iv = index_values(is.numel(), 5);
  const Tensor x = test::random_tensor({4, 5}, DType::F64, -1, 1, 11);
  EXPECT_GRADCHECK([&](const std::vector<Tensor>& in) { return gather(in[0], 1, iv, is); },
                   (std::vector<Tensor>{x}));
  const Tensor w = test::random_tensor(is, DType::F64, -1, 1, 12);
  auto grad_of = [&](bool host_index) {
    Tensor t = x.clone().detach();
    t.set_requires_grad(true);
    const Tensor out = host_index ? gather(t, 1, iv, is) : gather(t, 1, idx64(iv, is));
    sum(mul(out, w)).backward();
    return t.grad().to_vector<double>();
  };
  EXPECT_EQ(grad_of(true), grad_of(false));
}

TEST(GatherHostIndex, BadIndicesAreRefusedOnTheHost) {
  const Tensor t = zeros({2, 4}, {DType::F32});
  std::string msg = test::error_of([&] { gather(t, 1, {1, 3, 4, 0}, Dims{2, 2}); });
  EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 4 at flat position 2"), std::string::npos) << msg;
  msg = test::error_of([&] { gather(t, 0, {-1, 0}, Dims{1, 2}); });
  EXPECT_NE(msg.find("index -1 at flat position 0"), std::string::npos) << msg;
  msg = test::error_of([&] { gather(t, 1, {0, 1, 2}, Dims{2, 2}); });
  EXPECT_NE(msg.find("3 values"), std::string::npos) << msg;
  msg = test::error_of([&] { gather(t, 1, {0, 1}, Dims{2}); });
  EXPECT_NE(msg.find("the input's rank 2"), std::string::npos) << msg;
}

}  // namespace
}  // namespace fk
