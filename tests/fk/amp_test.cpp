#include "fk/amp.h"

#include <cmath>
#include <limits>
#include <thread>

#include "test_util.h"

namespace fk {
namespace {

TEST(Autocast, ScopesNestAndAreThreadLocal) {
  EXPECT_FALSE(amp::autocast_dtype().has_value());
  {
    amp::AutocastGuard g(DType::BF16);
    EXPECT_EQ(amp::autocast_dtype(), DType::BF16);
    {
      amp::AutocastGuard inner(DType::F16);
      EXPECT_EQ(amp::autocast_dtype(), DType::F16);
      {
        amp::AutocastGuard off(DType::F32);
        EXPECT_FALSE(amp::autocast_dtype().has_value());
      }
      EXPECT_EQ(amp::autocast_dtype(), DType::F16);
    }
    EXPECT_EQ(amp::autocast_dtype(), DType::BF16);
    bool other_thread_sees_autocast = true;
    std::thread t([&] { other_thread_sees_autocast = amp::autocast_dtype().has_value(); });
    t.join();
    EXPECT_FALSE(other_thread_sees_autocast);
  }
  EXPECT_FALSE(amp::autocast_dtype().has_value());
  try {
    amp::AutocastGuard bad(DType::F64);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got f64"), std::string::npos) << e.what();
  }
}

TEST(Autocast, MatmulClassOpsRunInHalfOthersDoNot) {
  Tensor a = test::random_tensor({4, 8}, DType::F32, -1, 1, 1);
  Tensor b = test::random_tensor({8, 3}, DType::F32, -1, 1, 2);
  Tensor w = test::random_tensor({3, 8}, DType::F32, -1, 1, 3);
  Tensor ref = matmul(a, b);
  for (DType dt : {DType::F16, DType::BF16}) {
    amp::AutocastGuard g(dt);
    Tensor c = matmul(a, b);
    EXPECT_EQ(c.dtype(), dt);
    test::expect_close(c, ref.to_vector<double>(), dt == DType::F16 ? 1e-2 : 5e-2);
    EXPECT_EQ(bmm(a.unsqueeze(0), b.unsqueeze(0)).dtype(), dt);
    EXPECT_EQ(linear(a, w, ones({3})).dtype(), dt);
    EXPECT_EQ(add(a, a).dtype(), DType::F32);
    EXPECT_EQ(matmul(a.to(DType::F64), b.to(DType::F64)).dtype(), DType::F64);  // f64 untouched
  }
  EXPECT_EQ(matmul(a, b).dtype(), DType::F32);
}

TEST(Autocast, GradientsReachF32Leaves) {
  Tensor x = test::random_tensor({2, 4}, DType::F32, -1, 1, 4).set_requires_grad(true);
  Tensor w = test::random_tensor({3, 4}, DType::F32, -1, 1, 5).set_requires_grad(true);
  Tensor y;
  {
    amp::AutocastGuard g(DType::BF16);
    y = sum(linear(x, w).to(DType::F32));
  }
  y.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), DType::F32);
  EXPECT_EQ(x.grad().dtype(), DType::F32);
  // d sum(x W^T)/dW[o,i] = sum_r x[r,i]
  auto xv = x.to_vector<double>();
  std::vector<double> expect;
  for (int o = 0; o < 3; ++o) {
    for (int i = 0; i < 4; ++i) expect.push_back(xv[i] + xv[4 + i]);
  }
  test::expect_close(w.grad(), expect, 2e-2);
}

TEST(GradScaler, ScalesUnscalesAndDetectsOverflow) {
  amp::GradScaler scaler;
  EXPECT_EQ(scaler.scale_value(), 65536.0);
  Tensor loss = full({}, 0.5, {DType::F16});
  Tensor scaled = scaler.scale(loss);
  EXPECT_EQ(scaled.dtype(), DType::F32);  // f16 would overflow at large scales
  EXPECT_EQ(scaled.item(), 32768.0);

  std::vector<Tensor> grads{full({3}, 65536.0 * 0.25, {DType::F32}), Tensor(),
                            full({2}, 65536.0 * 2.0, {DType::F64})};
  Tensor alias = grads[0];  // unscaling is in place: parameters' .grad see it
  EXPECT_TRUE(scaler.unscale_and_check(grads));
  test::expect_close(alias, {0.25, 0.25, 0.25});
  test::expect_close(grads[2], {2.0, 2.0});

  std::vector<Tensor> bad{
      ones({2}), from_vector(std::vector<float>{1.0f, std::numeric_limits<float>::infinity()})};
  EXPECT_FALSE(scaler.unscale_and_check(bad));
  std::vector<Tensor> nan_half{from_vector(std::vector<float>{std::nanf("")}).to(DType::F16)};
  EXPECT_FALSE(scaler.unscale_and_check(nan_half));
  std::vector<Tensor> cplx{
      from_vector(std::vector<c128>{c128(1.0, std::numeric_limits<double>::infinity())})};
  EXPECT_FALSE(scaler.unscale_and_check(cplx));
}

// Half gradients are unscaled in f32 and rounded once, in place: at a scale
// past 2^24 a half-typed 1/scale is 0 (every gradient came back 0 and
// "finite"); a scale not a power of two was inexact.
TEST(GradScaler, HalfGradientsAreUnscaledInF32) {
  for (DType half : {DType::F16, DType::BF16}) {
    amp::GradScaler big({.init_scale = 67108864.0});   // 2^26
    std::vector<Tensor> g{full({2}, 4096.0, {half})};  // 2^-14 scaled
    Tensor alias = g[0];
    EXPECT_TRUE(big.unscale_and_check(g));
    EXPECT_EQ(alias.dtype(), half);
    test::expect_close(alias.to(DType::F64), {std::ldexp(1.0, -14), std::ldexp(1.0, -14)}, 0);
    amp::GradScaler odd({.init_scale = 1000.0});
    std::vector<Tensor> h{full({1}, 1000.0, {half})};
    EXPECT_TRUE(odd.unscale_and_check(h));
    test::expect_close(h[0].to(DType::F64), {1.0}, 0);  // 1000 * fl(1/1000) was 1.0004
  }
}

TEST(GradScaler, BacksOffOnInfAndGrowsAfterInterval) {
  amp::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 3});
  scaler.update(true);
  EXPECT_EQ(scaler.scale_value(), 512.0);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale_value(), 512.0);
  scaler.update(true);  // an overflow resets the run of clean steps
  EXPECT_EQ(scaler.scale_value(), 256.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale_value(), 256.0);
  scaler.update(false);
  EXPECT_EQ(scaler.scale_value(), 512.0);
  EXPECT_EQ(scaler.growth_tracker(), 0);

  amp::GradScaler defaults;
  for (int i = 0; i < 1999; ++i) defaults.update(false);
  EXPECT_EQ(defaults.scale_value(), 65536.0);
  defaults.update(false);
  EXPECT_EQ(defaults.scale_value(), 131072.0);

  EXPECT_THROW(amp::GradScaler({.init_scale = 0.0}), Error);
  EXPECT_THROW(amp::GradScaler({.growth_factor = 1.0}), Error);
  EXPECT_THROW(amp::GradScaler({.backoff_factor = 1.5}), Error);
  EXPECT_THROW(amp::GradScaler({.growth_interval = 0}), Error);
}

TEST(GradScaler, TrainingStepSkipsOnOverflow) {
  // A step in f16: the scaled gradient of a large loss overflows f16, the
  // scaler reports it, the step is skipped and the scale backs off until the
  // gradients fit.
  Tensor w = full({2}, 1.0, {DType::F16}).set_requires_grad(true);
  amp::GradScaler scaler({.init_scale = 65536.0});
  int skipped = 0;
  for (int step = 0; step < 20; ++step) {
    w.set_grad(Tensor());
    Tensor loss = sum(mul(w, 8.0));  // dloss/dw = 8; 8 * 65536 overflows f16
    scaler.scale(loss).backward();
    std::vector<Tensor> grads{w.grad()};
    bool ok = scaler.unscale_and_check(grads);
    scaler.update(!ok);
    if (!ok) {
      ++skipped;
      continue;
    }
    test::expect_close(grads[0], {8.0, 8.0});
    break;
  }
  EXPECT_GE(skipped, 1);
  EXPECT_LT(scaler.scale_value() * 8.0, 65504.0);  // f16's largest finite value
}

TEST(AllowTf32, IsAProcessWideSwitch) {
  bool initial = amp::allow_tf32();
  amp::set_allow_tf32(true);
  EXPECT_TRUE(amp::allow_tf32());
  amp::set_allow_tf32(false);
  EXPECT_FALSE(amp::allow_tf32());
  amp::set_allow_tf32(initial);
}

}  // namespace
}  // namespace fk
