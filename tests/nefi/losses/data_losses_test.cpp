// The data terms whose normalisation depends on the observations
// (data_losses.h: relative, log (max / mean / none) and normalized MSE) and
// the mask-weighted means (Huber, Poisson NLL) against the per-step form they
// replace, written out here as it was: the data's energy, scale, mean and
// weight sum read back as doubles every call. Values and gradients must be
// bitwise equal on the CPU in f32 and f64, with and without a mask, on the
// first call and on one from the made constants (same ops in the same order;
// the host's 1 / x rounded to the dtype once on both sides). An in-place
// change of the observations makes the constants anew; degenerate data are
// still errors. masked_mse_rows takes an empty batch. (Finite differences:
// loss_dispatch_test.cpp.)
#include "nefi/losses/data_losses.h"

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

// --- the forms before session 13 --------------------------------------------

fk::Tensor wmean_before(const fk::Tensor& t, const fk::Tensor& mask) {
  if (!mask.defined()) return fk::mean(t);
  return fk::div(fk::sum(fk::mul(t, mask)), fk::sum(mask).item());
}

fk::Tensor mask_in(const nefi::Measurement& m, fk::DType dt) {
  return m.mask.defined() ? m.mask.to(dt) : fk::Tensor();
}

fk::Tensor relative_before(const fk::Tensor& pred, const nefi::Measurement& m) {
  const fk::Tensor& y = m.data;
  fk::Tensor y2 = fk::square(y);
  const double denom = (m.mask.defined() ? fk::sum(fk::mul(y2, m.mask)) : fk::sum(y2)).item();
  fk::Tensor r = fk::square(fk::sub(pred, y.to(pred.dtype())));
  if (m.mask.defined()) r = fk::mul(r, m.mask.to(pred.dtype()));
  return fk::div(fk::sum(r), denom);
}

fk::Tensor log_before(const fk::Tensor& pred, const nefi::Measurement& m,
                      const std::string& normalize, double eps) {
  const fk::Tensor y = m.data.to(pred.dtype());
  const fk::Tensor a = fk::abs(y), w = mask_in(m, pred.dtype());
  double s = 1.0;
  // Over the observed cells (session 58): max where the mask is > 0, the
  // mask-weighted mean.
  if (normalize == "max")
    s = (w.defined()
             ? fk::amax(fk::where(fk::gt(w, fk::scalar_like(w, 0.0)), a, fk::scalar_like(a, 0.0)))
             : fk::amax(a))
            .item();
  if (normalize == "mean")
    s = (w.defined() ? fk::div(fk::sum(fk::mul(a, w)), fk::sum(w)) : fk::mean(a)).item();
  if (!(s > 0)) s = 1.0;
  fk::Tensor lp = fk::log(fk::add(fk::mul(fk::relu(pred), 1.0 / s), eps));
  fk::Tensor ly = fk::log(fk::add(fk::mul(fk::relu(y), 1.0 / s), eps));
  return wmean_before(fk::square(fk::sub(lp, ly)), mask_in(m, pred.dtype()));
}

fk::Tensor normalized_before(const fk::Tensor& pred, const nefi::Measurement& m) {
  const fk::Tensor y = m.data.to(pred.dtype());
  const fk::Tensor w = mask_in(m, pred.dtype());
  const double ym = wmean_before(y, w).item();
  fk::Tensor pn = fk::div(pred, fk::add(wmean_before(pred, w), 1e-12));
  return wmean_before(fk::square(fk::sub(pn, fk::mul(y, 1.0 / ym))), w);
}

fk::Tensor huber_before(const fk::Tensor& pred, const nefi::Measurement& m, double delta) {
  fk::Tensor r = fk::abs(fk::sub(pred, m.data.to(pred.dtype())));
  fk::Tensor quad = fk::mul(fk::square(r), 0.5);
  fk::Tensor lin = fk::mul(fk::sub(r, 0.5 * delta), delta);
  fk::Tensor h = fk::where(fk::lt(r, fk::scalar_like(r, delta)), quad, lin);
  return wmean_before(h, mask_in(m, pred.dtype()));
}

// The cells in f64 (the continuation below 0 needs its range), positive
// predictions here, rounded once to the prediction's dtype.
fk::Tensor poisson_before(const fk::Tensor& pred, const nefi::Measurement& m, double eps) {
  const fk::Tensor p = pred.to(fk::DType::F64), y = m.data.to(pred.dtype()).to(fk::DType::F64);
  fk::Tensor nll = fk::sub(p, fk::mul(y, fk::log(fk::add(p, eps)))).to(pred.dtype());
  return wmean_before(nll, mask_in(m, pred.dtype()));
}

// --- the comparison ----------------------------------------------------------

struct Case {
  std::string label;
  nefi::LossPtr loss;
  std::function<fk::Tensor(const fk::Tensor&, const nefi::Measurement&)> before;
};

std::vector<Case> cases() {
  using M = nefi::Measurement;
  using T = fk::Tensor;
  return {
      {"relative_mse", nefi::relative_mse_loss(), relative_before},
      {"log_mse_max", nefi::log_mse_loss("max", 1e-6),
       [](const T& p, const M& m) { return log_before(p, m, "max", 1e-6); }},
      {"log_mse_mean", nefi::log_mse_loss("mean", 1e-6),
       [](const T& p, const M& m) { return log_before(p, m, "mean", 1e-6); }},
      {"log_mse_none", nefi::log_mse_loss("none", 1e-6),
       [](const T& p, const M& m) { return log_before(p, m, "none", 1e-6); }},
      {"normalized_mse", nefi::normalized_mse_loss(), normalized_before},
      {"huber", nefi::huber_loss(0.5),
       [](const T& p, const M& m) { return huber_before(p, m, 0.5); }},
      {"poisson_nll", nefi::poisson_nll_loss(1e-6),
       [](const T& p, const M& m) { return poisson_before(p, m, 1e-6); }},
  };
}

// Positive predictions and data (the logs see their argument), a fractional
// mask with unobserved cells; the data in f64.
nefi::Measurement observation(bool masked, uint64_t seed) {
  fk::Generator g(seed);
  nefi::Measurement m;
  m.data = fk::uniform({5, 7}, 0.1, 3.0, {fk::DType::F64}, &g);
  if (masked) {
    std::vector<double> w(35);
    for (size_t i = 0; i < w.size(); ++i) w[i] = i % 5 == 1 ? 0.0 : (i % 3 == 0 ? 0.5 : 1.0);
    m.mask = fk::from_vector(w, {5, 7});
  }
  return m;
}

struct Evaluation {
  double value;
  std::vector<double> grad;
};

Evaluation evaluate(const fk::Tensor& x, const std::function<fk::Tensor()>& f) {
  x.set_grad(fk::Tensor());
  const fk::Tensor v = f();
  v.backward(fk::ones(v.shape(), {v.dtype()}));
  return {v.item(), x.grad().to_vector<double>()};
}

TEST(NefiDataLosses, BitwiseThePerStepHostScalarForm) {
  for (const Case& c : cases())
    for (fk::DType dt : {fk::DType::F64, fk::DType::F32})
      for (bool masked : {false, true}) {
        SCOPED_TRACE(c.label + " " + fk::name(dt) + (masked ? " masked" : ""));
        const nefi::Measurement m = observation(masked, 4);
        fk::Generator g(5);
        fk::Tensor p = fk::uniform({5, 7}, 0.1, 3.0, {fk::DType::F64}, &g).to(dt);
        p.set_requires_grad(true);
        const nefi::FieldMap fields{{"x", p}};
        nefi::LossContext ctx{&fields, p, &m, nullptr, nullptr, 0, 0, 1.0};
        const Evaluation before = evaluate(p, [&] { return c.before(p, m); });
        for (int call = 0; call < 2; ++call) {  // the second from the made constants
          const Evaluation now = evaluate(p, [&] { return c.loss->forward(ctx); });
          EXPECT_EQ(now.value, before.value) << "call " << call;
          EXPECT_EQ(now.grad, before.grad) << "call " << call;
        }
      }
}

TEST(NefiDataLosses, ConstantsFollowAnInPlaceChangeOfTheData) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.label);
    nefi::Measurement m = observation(true, 6);
    fk::Generator g(7);
    const fk::Tensor p = fk::uniform({5, 7}, 0.1, 3.0, {fk::DType::F64}, &g);
    nefi::LossContext ctx{nullptr, p, &m, nullptr, nullptr, 0, 0, 1.0};
    const double first = c.loss->forward(ctx).item();
    m.data.copy_(fk::uniform({5, 7}, 0.1, 3.0, {fk::DType::F64}, &g));
    const double changed = c.loss->forward(ctx).item();
    EXPECT_NE(changed, first);
    EXPECT_EQ(changed, c.before(p, m).item());
  }
}

TEST(NefiDataLosses, DegenerateDataAreStillErrors) {
  nefi::Measurement m;
  m.data = fk::zeros({3, 4}, {fk::DType::F64});
  const fk::Tensor p = fk::ones({3, 4}, {fk::DType::F64});
  nefi::LossContext ctx{nullptr, p, &m, nullptr, nullptr, 0, 0, 1.0};
  EXPECT_THROW(nefi::relative_mse_loss()->forward(ctx), fk::Error);
  EXPECT_THROW(nefi::normalized_mse_loss()->forward(ctx), fk::Error);
  // log-MSE's zero scale falls back to 1, as before.
  EXPECT_EQ(nefi::log_mse_loss("max", 1e-6)->forward(ctx).item(),
            log_before(p, m, "max", 1e-6).item());
}

// masked_mse_rows of an empty batch: the forward gives the empty (0) values,
// and its backward the empty (0, 4) gradient (it divided the cells by the
// row count, 0: an integer division by zero, SIGFPE).
TEST(NefiDataLosses, MaskedMseRowsOfAnEmptyBatchHasAnEmptyGradient) {
  for (fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
    SCOPED_TRACE(fk::name(dt));
    fk::Tensor p = fk::zeros({0, 4}, {dt});
    p.set_requires_grad(true);
    const fk::Tensor y = fk::zeros({0, 4}, {dt});
    const fk::Tensor v = nefi::masked_mse_rows(p, y, fk::Tensor(), {});
    EXPECT_EQ(v.shape(), fk::Dims{0});
    fk::sum(v).backward();
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().shape(), (fk::Dims{0, 4}));
  }
}

// check_observations refuses, on the host, exactly what the CPU forward
// refuses (a device forward reads nothing back and would give NaN): zero
// data, and data whose only non-zero cells are unobserved.
TEST(NefiDataLosses, CheckObservationsRefusesWhatTheCpuForwardRefuses) {
  using fk::test::error_of;
  nefi::Measurement zero, hidden, fine;
  zero.data = fk::zeros({3, 4}, {fk::DType::F64});
  hidden.data = fk::from_vector(std::vector<double>{0, 0, 5, 0, 0, 0}, fk::Dims{2, 3});
  hidden.mask = fk::from_vector(std::vector<double>{1, 1, 0, 1, 1, 1}, fk::Dims{2, 3});
  fine.data = fk::from_vector(std::vector<double>{0, 0, 5, 1, 0, 0}, fk::Dims{2, 3});
  fine.mask = hidden.mask;
  for (const nefi::LossPtr& loss : {nefi::relative_mse_loss(), nefi::normalized_mse_loss()}) {
    for (const nefi::Measurement* m : {&zero, &hidden}) {
      const fk::Tensor p = fk::ones(m->data.shape(), {fk::DType::F64});
      nefi::LossContext ctx{nullptr, p, m, nullptr, nullptr, 0, 0, 1.0};
      const std::string cpu = error_of([&] { (void)loss->forward(ctx); });
      ASSERT_NE(cpu, "") << loss->name();
      EXPECT_EQ(error_of([&] { loss->check_observations(*m); }), cpu) << loss->name();
    }
    EXPECT_EQ(error_of([&] { loss->check_observations(fine); }), "") << loss->name();
  }
  // A noise-aware MSE needs a known positive noise level (plain MSE does not).
  const nefi::LossPtr aware = nefi::mse_loss(true);
  const fk::Tensor p = fk::ones(fine.data.shape(), {fk::DType::F64});
  nefi::LossContext ctx{nullptr, p, &fine, nullptr, nullptr, 0, 0, 1.0};
  const std::string cpu = error_of([&] { (void)aware->forward(ctx); });
  ASSERT_NE(cpu, "");
  EXPECT_EQ(error_of([&] { aware->check_observations(fine); }), cpu);
  EXPECT_EQ(error_of([&] { nefi::mse_loss()->check_observations(fine); }), "");
  fine.noise_std = 0.1;
  EXPECT_EQ(error_of([&] { aware->check_observations(fine); }), "");
}

}  // namespace
