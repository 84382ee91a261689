// prod_backward.cu's kernel runs on the emulated device (emulated_device.h):
// the gradient of prod over rows of f32, f64, c64 and c128, with rows holding
// no, one and two zeros (and, for the reals, infinities and NaN), rows of one
// element, more rows than a block has threads, and empty shapes, against fk's
// CPU prod_backward, bit for bit (both multiply before-i and after-i products
// in the same order), in both thread orders.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/fk/emulated_fk_test_util.h"
#include "fk/cuda/kernels.h"
#include "fk/error.h"
#include "fk/ops/copy.h"
#include "fk/ops/reduce/prod.h"

// The emulated launcher this file runs: kernels.h's, in ::emu (a signature
// that drifts from its definition fails to link).
namespace fk::cuda::emu {
void launch_prod_backward_lastdim(int dtype, const void* x, const void* grad, void* grad_in,
                                  int64_t outer, int64_t inner, void* stream);
}  // namespace fk::cuda::emu

namespace {

using fk::Dims;
using fk::DType;
using fk_emu_test::Buffer;
using fk_emu_test::code;

// Row values in [-2, 2], about one in six zero; with `specials` an infinity
// or NaN now and then. Row 1 has a single zero, row 2 two (when there are
// such rows and columns).
Buffer rows_of(DType t, int64_t outer, int64_t inner, uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(-2.0, 2.0);
  const double special[] = {std::numeric_limits<double>::infinity(),
                            -std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()};
  Buffer b(t, outer * inner);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      const uint32_t r = rng() % 24;
      double re = unit(rng), im = unit(rng);
      if (r < 4 && o > 2) re = im = 0.0;
      if (specials && r == 5 && o > 2) re = special[rng() % 3];
      if ((o == 1 || o == 2) && re == 0.0 && im == 0.0) re = 1.5;  // zeros only where placed
      if (o == 1 && i == inner / 2) re = im = 0.0;
      if (o == 2 && (i == 0 || i == inner - 1)) re = im = 0.0;
      b.set(o * inner + i, re, im);
    }
  }
  return b;
}

void check(DType t, int64_t outer, int64_t inner) {
  const std::string what =
      std::string(fk::name(t)) + " [" + std::to_string(outer) + ", " + std::to_string(inner) + "]";
  SCOPED_TRACE(what);
  Buffer x = rows_of(t, outer, inner, 1 + static_cast<uint32_t>(inner), !fk::is_complex(t));
  Buffer g = fk_emu_test::random_buffer(t, outer, 2);
  Buffer want(t, outer * inner);
  fk::Tensor cpu =
      fk::prod_backward(fk_emu_test::view_of(g, Dims{outer}, Dims{1}),
                        fk_emu_test::view_of(x, Dims{outer, inner}, Dims{inner, 1}), Dims{1});
  if (want.n > 0) fk_emu_test::view_of(want, Dims{outer, inner}, Dims{inner, 1}).copy_(cpu);
  fkemu_test::in_both_orders([&](fkemu::Order) {
    Buffer got = want.n > 0 ? fk_emu_test::random_buffer(t, want.n, 3) : Buffer(t, 0);
    fk::cuda::emu::launch_prod_backward_lastdim(code(t), x.data(), g.data(), got.data(), outer,
                                                inner, nullptr);
    fk_emu_test::expect_same_elements(t, got.data(), want.data(), want.n, what);
  });
}

TEST(EmulatedFkProdBackward, RowsAsTheCpu) {
  const int64_t shapes[][2] = {{300, 5}, {4, 1}, {3, 40}, {257, 2}, {6, 17}};
  for (DType t : {DType::F32, DType::F64, DType::C64, DType::C128}) {
    for (const auto& s : shapes) check(t, s[0], s[1]);
  }
}

TEST(EmulatedFkProdBackward, EmptyShapesWriteNothing) {
  std::vector<double> x(4, 2.0), g(4, 1.0), out(4, 7.0);
  for (const auto& s : {std::pair<int64_t, int64_t>{0, 4}, {4, 0}}) {
    fk::cuda::emu::launch_prod_backward_lastdim(code(DType::F64), x.data(), g.data(), out.data(),
                                                s.first, s.second, nullptr);
  }
  EXPECT_EQ(out, std::vector<double>(4, 7.0));
}

TEST(EmulatedFkProdBackward, RefusesOtherDtypesAndNegativeSizes) {
  std::vector<double> x(4);
  for (DType t : {DType::F16, DType::BF16, DType::I64, DType::Bool}) {
    EXPECT_THROW(fk::cuda::emu::launch_prod_backward_lastdim(code(t), x.data(), x.data(), x.data(),
                                                             1, 2, nullptr),
                 fk::Error)
        << fk::name(t);
  }
  EXPECT_THROW(fk::cuda::emu::launch_prod_backward_lastdim(code(DType::F64), x.data(), x.data(),
                                                           x.data(), -1, 2, nullptr),
               fk::Error);
}

}  // namespace
