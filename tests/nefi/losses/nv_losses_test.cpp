// The NV terms (nv_losses.h) without a host read against the per-step form
// they replace, written out here as it was: the same fk ops with the data's
// mean, max, scale and energy read back as doubles every call. The values
// and the gradients must be bitwise equal in f32 and f64 (same ops, same
// order; the host's 1 / x is rounded to the dtype once on both sides), with
// the data in either dtype. Also: the data-side constants follow an in-place
// change of the observations, and degenerate data still throw on the CPU.
// (Finite-difference gradchecks in f64: instances/nv_relaxometry_test.cpp.)
#include "nefi/losses/nv_losses.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "fk/test_util.h"

namespace {

fk::Tensor noise_map(const fk::Tensor& s) {
  return fk::sum(s, {s.dim() - 3});
}

// The terms as they read the host before (nv_losses.cpp before session 13).
fk::Tensor noise_map_before(const fk::Tensor& pred, const fk::Tensor& data) {
  const fk::Tensor mp = noise_map(pred);
  const fk::Tensor my = noise_map(data.to(pred.dtype()));
  const double ym = fk::mean(my).item();
  const fk::Tensor pn = fk::div(mp, fk::add(fk::mean(mp), 1e-12));
  return fk::mean(fk::square(fk::sub(pn, fk::mul(my, 1.0 / ym))));
}

fk::Tensor direct_density_before(const fk::Tensor& rho, const fk::Tensor& data) {
  const fk::Tensor my = noise_map(data.to(rho.dtype()));
  const double ymax = fk::amax(my).item();
  const fk::Tensor rn = fk::div(rho, fk::add(fk::amax(rho), 1e-12));
  return fk::mean(fk::square(fk::sub(rn, fk::mul(my, 1.0 / ymax))));
}

fk::Tensor scaled_relative_mse_before(const fk::Tensor& pred, const fk::Tensor& data) {
  const fk::Tensor y = data.to(pred.dtype());
  const double s = fk::amax(fk::abs(y)).item();
  const fk::Tensor ys = fk::mul(y, 1.0 / s);
  const double denom = fk::sum(fk::square(ys)).item();
  return fk::div(fk::sum(fk::square(fk::sub(fk::mul(pred, 1.0 / s), ys))), denom);
}

struct Inputs {
  nefi::Measurement obs;
  fk::Tensor pred, rho;
};

Inputs inputs(fk::DType dt, fk::DType data_dt, uint64_t seed) {
  fk::Generator g(seed);
  Inputs in;
  in.obs.data = fk::uniform({4, 5, 6}, 0.2, 1.7, {fk::DType::F64}, &g).to(data_dt);
  in.pred = fk::uniform({4, 5, 6}, 0.1, 2.0, {fk::DType::F64}, &g).to(dt);
  in.rho = fk::uniform({5, 6}, 0.0, 1.3, {fk::DType::F64}, &g).to(dt);
  in.pred.set_requires_grad(true);
  in.rho.set_requires_grad(true);
  return in;
}

struct Evaluation {
  std::vector<double> value, grad;
};

// value and d value / d x of f(x) (x a leaf; its gradient is reset).
Evaluation evaluate(const std::function<fk::Tensor()>& f, const fk::Tensor& x) {
  x.set_grad(fk::Tensor());
  const fk::Tensor v = f();
  v.backward(fk::ones(v.shape(), {v.dtype()}));
  return {v.to_vector<double>(), x.grad().to_vector<double>()};
}

void expect_bitwise(const Evaluation& now, const Evaluation& before, const std::string& what) {
  EXPECT_EQ(now.value, before.value) << what << " value";
  EXPECT_EQ(now.grad, before.grad) << what << " gradient";
}

TEST(NefiNvLosses, BitwiseThePerStepHostScalarForm) {
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
    for (fk::DType data_dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(std::string(fk::name(dt)) + " prediction, " + fk::name(data_dt) + " data");
      Inputs in = inputs(dt, data_dt, 5);
      const nefi::FieldMap fields{{"rho", in.rho}};
      nefi::LossContext ctx{&fields, in.pred, &in.obs, nullptr, nullptr, 0, 0, 1.0};
      const auto noise = nefi::noise_map_loss();
      const auto direct = nefi::direct_density_loss();
      const auto scaled = nefi::scaled_relative_mse_loss();
      for (int call = 0; call < 2; ++call) {  // the second call uses the made constants
        SCOPED_TRACE("call " + std::to_string(call));
        expect_bitwise(evaluate([&] { return noise->forward(ctx); }, in.pred),
                       evaluate([&] { return noise_map_before(in.pred, in.obs.data); }, in.pred),
                       "noise_map");
        expect_bitwise(evaluate([&] { return direct->forward(ctx); }, in.rho),
                       evaluate([&] { return direct_density_before(in.rho, in.obs.data); }, in.rho),
                       "direct_density");
        expect_bitwise(
            evaluate([&] { return scaled->forward(ctx); }, in.pred),
            evaluate([&] { return scaled_relative_mse_before(in.pred, in.obs.data); }, in.pred),
            "scaled_relative_mse");
      }
    }
}

// The constants are the observations' as they are now: an in-place change
// (fill_) of the data makes them anew.
TEST(NefiNvLosses, ConstantsFollowAnInPlaceChangeOfTheData) {
  Inputs in = inputs(fk::DType::F64, fk::DType::F64, 8);
  const nefi::FieldMap fields{{"rho", in.rho}};
  nefi::LossContext ctx{&fields, in.pred, &in.obs, nullptr, nullptr, 0, 0, 1.0};
  const auto noise = nefi::noise_map_loss();
  const auto scaled = nefi::scaled_relative_mse_loss();
  const double noise_before = noise->forward(ctx).item();
  const double scaled_before = scaled->forward(ctx).item();
  fk::Generator g(9);
  in.obs.data.copy_(fk::uniform({4, 5, 6}, 0.2, 1.7, {fk::DType::F64}, &g));
  EXPECT_NE(noise->forward(ctx).item(), noise_before);
  EXPECT_NE(scaled->forward(ctx).item(), scaled_before);
  EXPECT_EQ(noise->forward(ctx).item(), noise_map_before(in.pred, in.obs.data).item());
  EXPECT_EQ(scaled->forward(ctx).item(), scaled_relative_mse_before(in.pred, in.obs.data).item());
}

TEST(NefiNvLosses, DegenerateDataAreErrorsOnTheCpu) {
  Inputs in = inputs(fk::DType::F64, fk::DType::F64, 2);
  const nefi::FieldMap fields{{"rho", in.rho}};
  in.obs.data = fk::zeros({4, 5, 6}, {fk::DType::F64});
  nefi::LossContext ctx{&fields, in.pred, &in.obs, nullptr, nullptr, 0, 0, 1.0};
  EXPECT_THROW(nefi::noise_map_loss()->forward(ctx), fk::Error);
  EXPECT_THROW(nefi::direct_density_loss()->forward(ctx), fk::Error);
  EXPECT_THROW(nefi::scaled_relative_mse_loss()->forward(ctx), fk::Error);
  // A field whose shape is not the noise map's.
  in.obs.data = fk::ones({4, 5, 6}, {fk::DType::F64});
  const nefi::FieldMap wrong{{"rho", fk::ones({6, 5}, {fk::DType::F64})}};
  ctx.fields = &wrong;
  EXPECT_THROW(nefi::direct_density_loss()->forward(ctx), fk::Error);
  // Spectra without a frequency axis.
  ctx.pred = fk::ones({5, 6}, {fk::DType::F64});
  EXPECT_THROW(nefi::noise_map_loss()->forward(ctx), fk::Error);
}

// check_observations refuses, on the host, what the CPU forward refuses
// (on a device forward would give NaN), with the same message.
TEST(NefiNvLosses, CheckObservationsRefusesWhatTheCpuForwardRefuses) {
  Inputs in = inputs(fk::DType::F64, fk::DType::F64, 2);
  const nefi::FieldMap fields{{"rho", in.rho}};
  const nefi::Measurement good = in.obs;
  in.obs.data = fk::zeros({4, 5, 6}, {fk::DType::F64});
  nefi::LossContext ctx{&fields, in.pred, &in.obs, nullptr, nullptr, 0, 0, 1.0};
  for (const nefi::LossPtr& loss :
       {nefi::noise_map_loss(), nefi::direct_density_loss(), nefi::scaled_relative_mse_loss()}) {
    const std::string cpu = fk::test::error_of([&] { (void)loss->forward(ctx); });
    ASSERT_NE(cpu, "") << loss->name();
    EXPECT_EQ(fk::test::error_of([&] { loss->check_observations(in.obs); }), cpu) << loss->name();
    EXPECT_EQ(fk::test::error_of([&] { loss->check_observations(good); }), "") << loss->name();
  }
}

}  // namespace
