#include "fk/ops/index.h"

#include <cmath>
#include <cstring>
#include <string>

#include "../test_util.h"
#include "index/helpers.h"

namespace fk {
namespace {

using test::error_of;

using namespace index_test;
using Fn = testing::TensorFn;

TEST(Index, InPlaceForms) {
  Tensor self = zeros({2, 3}, {DType::F64});
  uint32_t v0 = self.version();
  index_add_(self, 1, idx64({2, 2, 0}, {3}), ones({2, 3}, {DType::F64}), 2.0);
  test::expect_close(self, {2, 0, 4, 2, 0, 4}, 0.0);
  EXPECT_GT(self.version(), v0);
  scatter_add_(self, 0, idx64({1, 1, 1}, {1, 3}),
               from_vector(std::vector<double>{1, 2, 3}, {1, 3}));
  test::expect_close(self, {2, 0, 4, 3, 2, 7}, 0.0);
  masked_fill_(self, from_vector(std::vector<bool>{true, false}, {2, 1}), -1.0);
  test::expect_close(self, {-1, -1, -1, 3, 2, 7}, 0.0);
  // Non-contiguous targets are written through their view.
  Tensor base = zeros({3, 2}, {DType::F64});
  Tensor view = base.t();  // [2, 3]
  index_add_(view, 1, idx64({0, 2}, {2}), ones({2, 2}, {DType::F64}));
  scatter_add_(view, 1, idx64({1, 1}, {2, 1}), full({2, 1}, 5.0, {DType::F64}));
  test::expect_close(base, {1, 1, 5, 5, 1, 1}, 0.0);
  // f16 targets accumulate in f32.
  Tensor h = zeros({2}, {DType::F16});
  index_add_(h, 0, idx64({1, 1}, {2}), full({2}, 0.25, {DType::F32}));
  EXPECT_EQ(h.dtype(), DType::F16);
  test::expect_close(h, {0, 0.5}, 0.0);
  // Refused on tracked tensors and for sources that cannot cast to self.
  Tensor g = zeros({3}, {DType::F64, kCPU, true});
  EXPECT_THROW(masked_fill_(g, from_vector(std::vector<bool>{true, true, true}), 1.0), Error);
  EXPECT_THROW(index_add_(g, 0, idx64({0}, {1}), ones({1}, {DType::F64})), Error);
  // A source needing grad is refused too (its gradient would be dropped), but
  // not under no_grad.
  Tensor plain = zeros({3}, {DType::F64});
  Tensor src = ones({1}, {DType::F64, kCPU, true});
  for (int op = 0; op < 2; ++op) {
    try {
      if (op == 0) index_add_(plain, 0, idx64({1}, {1}), src);
      if (op == 1) scatter_add_(plain, 0, idx64({1}, {1}), src);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("in-place ops are not recorded by autograd"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("source requiring grad"), std::string::npos) << e.what();
    }
  }
  test::expect_close(plain, {0, 0, 0}, 0.0);
  {
    autograd::NoGradGuard ng;
    index_add_(plain, 0, idx64({1}, {1}), src, 2.0);
    scatter_add_(plain, 0, idx64({2}, {1}), src);
    masked_fill_(g, from_vector(std::vector<bool>{true, false, false}), 4.0);
  }
  test::expect_close(plain, {0, 2, 1}, 0.0);
  test::expect_close(g, {4, 0, 0}, 0.0);
  Tensor f = zeros({3}, {DType::F32});
  EXPECT_THROW(index_add_(f, 0, idx64({0}, {1}), test::random_complex({1})), Error);
}

TEST(Index, GradcheckAll) {
  Tensor t = test::random_tensor({4, 3}, DType::F64, -1, 1, 8).set_requires_grad(true);
  Tensor u = test::random_tensor({3, 5}, DType::F64, -1, 1, 9).set_requires_grad(true);
  Tensor i1 = idx64({2, 0, 2, 3, 3}, {5});
  Tensor i2 = idx32({1, 1, 0, 2, 0, 0, 2, 2, 1, 1, 1, 1, 0, 1, 2}, {3, 5});
  Tensor mask = from_vector(std::vector<bool>{true, false, false, true, true, false, false, true,
                                              false, true, false, true},
                            {4, 3});
  std::vector<Tensor> in = {t, u};
  // index_select on a transposed input, both dims.
  Fn f1 = [&](const std::vector<Tensor>& x) { return index_select(x[1].t(), 0, i1); };
  EXPECT_GRADCHECK(f1, in);
  Fn f2 = [&](const std::vector<Tensor>& x) { return index_select(x[0], 1, idx64({2, 2}, {2})); };
  EXPECT_GRADCHECK(f2, in);
  // gather on a transposed input ([5, 3]) along dim 0, and with broadcasting.
  Fn f3 = [&](const std::vector<Tensor>& x) { return gather(x[1].t(), 1, i2.t()); };
  EXPECT_GRADCHECK(f3, in);
  Fn f4 = [&](const std::vector<Tensor>& x) {
    return gather(x[1].narrow(0, 1, 1), 1, i2);  // [1, 5] broadcast to [3, 5]
  };
  EXPECT_GRADCHECK(f4, in);
  // scatter_add: both operands, a non-contiguous source and a broadcast one.
  Fn f5 = [&](const std::vector<Tensor>& x) { return scatter_add(x[0].t(), 1, i2, x[1]); };
  EXPECT_GRADCHECK(f5, in);
  Fn f6 = [&](const std::vector<Tensor>& x) {
    return scatter_add(x[1], 0, idx64({2, 0, 0, 1, 2}, {1, 5}),
                       x[0].narrow(0, 0, 1).narrow(1, 0, 1));
  };
  EXPECT_GRADCHECK(f6, in);
  // index_add with alpha, source with transposed strides (same values).
  auto transposed_source = [](const Tensor& t0) { return t0.narrow(0, 0, 3).t().contiguous().t(); };
  ASSERT_FALSE(transposed_source(t).is_contiguous());
  Fn f7 = [&](const std::vector<Tensor>& x) {
    return index_add(x[1], 1, idx64({4, 0, 4}, {3}), transposed_source(x[0]), 1.5);
  };
  EXPECT_GRADCHECK(f7, in);
  Fn f8 = [&](const std::vector<Tensor>& x) {
    return index_add(x[0].t(), 1, idx64({1, 1, 3, 0, 2}, {5}), x[1]);
  };
  EXPECT_GRADCHECK(f8, in);
  // Masks: full-shape, broadcast, and on a transposed input.
  Fn f9 = [&](const std::vector<Tensor>& x) { return masked_fill(x[0], mask, 3.0); };
  EXPECT_GRADCHECK(f9, in);
  Fn f10 = [&](const std::vector<Tensor>& x) { return masked_select(x[0].t(), mask.t()); };
  EXPECT_GRADCHECK(f10, in);
  Fn f11 = [&](const std::vector<Tensor>& x) {
    return masked_select(x[0].narrow(0, 0, 1), mask);  // [1, 3] broadcast to [4, 3]
  };
  EXPECT_GRADCHECK(f11, in);
}

TEST(Index, ComplexGradcheck) {
  Tensor z = test::random_complex({4, 3}).set_requires_grad(true);
  Tensor r = test::random_tensor({2, 3}, DType::F64, -1, 1, 12).set_requires_grad(true);
  Tensor i = idx64({3, 3}, {2});
  Fn f = [&](const std::vector<Tensor>& x) { return index_add(x[0], 0, i, x[1], 0.5); };
  EXPECT_GRADCHECK(f, (std::vector<Tensor>{z, r}));
  Fn g = [&](const std::vector<Tensor>& x) {
    return gather(x[0], 0, idx64({0, 3, 1, 1, 2, 0}, {2, 3}));
  };
  EXPECT_GRADCHECK(g, (std::vector<Tensor>{z}));
}

TEST(Index, Errors) {
  Tensor t = zeros({3, 5}, {DType::F64});
  std::string msg = error_of([&] { index_select(t, 1, idx64({1, 7}, {2})); });
  EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 5)"), std::string::npos) << msg;
  msg = error_of([&] { gather(t, 0, idx64({-1}, {1, 1})); });
  EXPECT_NE(msg.find("index -1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
  EXPECT_THROW(scatter_add(t, 1, idx64({5}, {1, 1}), ones({1, 1}, {DType::F64})), Error);
  EXPECT_THROW(index_add(t, 0, idx32({3}, {1}), ones({1, 5}, {DType::F64})), Error);
  // Index dtype.
  msg = error_of([&] { index_select(t, 0, from_vector(std::vector<double>{0})); });
  EXPECT_NE(msg.find("f64"), std::string::npos) << msg;
  EXPECT_THROW(gather(t, 0, zeros({1, 1}, {DType::Bool})), Error);
  // Ranks and shapes.
  msg = error_of([&] { gather(t, 0, idx64({0, 1}, {2})); });
  EXPECT_NE(msg.find("rank"), std::string::npos) << msg;
  EXPECT_THROW(scatter_add(t, 0, idx64({0}, {1}), ones({1}, {DType::F64})), Error);
  EXPECT_THROW(index_select(t, 0, idx64({0, 1}, {1, 2})), Error);
  EXPECT_THROW(gather(t, 0, idx64({0, 0, 0, 0}, {1, 4})), Error);  // 4 vs 5 outside dim
  EXPECT_THROW(index_add(t, 0, idx64({0}, {1}), ones({2, 5}, {DType::F64})), Error);
  EXPECT_THROW(index_select(t, 2, idx64({0}, {1})), Error);
  // Masks.
  msg = error_of([&] { masked_fill(t, ones({3, 5}, {DType::F64}), 1.0); });
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
  EXPECT_THROW(masked_fill(t, zeros({2, 5}, {DType::Bool}), 1.0), Error);
  EXPECT_THROW(masked_fill(zeros({5}, {DType::F64}), zeros({3, 5}, {DType::Bool}), 1.0), Error);
  // A value the dtype cannot hold is refused in the caller's op's name.
  Tensor ints = zeros({3}, {DType::I32});
  const Tensor all = ones({3}, {DType::Bool});
  msg = error_of([&] { masked_fill(ints, all, std::nan("")); });
  EXPECT_EQ(msg.rfind("masked_fill: expected a value i32 holds", 0), 0u) << msg;
  msg = error_of([&] { masked_fill_(ints, all, 3e9); });
  EXPECT_EQ(msg.rfind("masked_fill_: expected a value i32 holds", 0), 0u) << msg;
  EXPECT_EQ(ints.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  // A failed in-place op leaves its target untouched.
  Tensor s = ones({3}, {DType::F64});
  EXPECT_THROW(index_add_(s, 0, idx64({0, 9}, {2}), ones({2}, {DType::F64})), Error);
  test::expect_close(s, {1, 1, 1}, 0.0);
}

}  // namespace
}  // namespace fk
