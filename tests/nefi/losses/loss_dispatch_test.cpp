// The CPU side of the losses' device dispatch: every data loss and
// regulariser (every_loss.h) still takes every input the CPU path takes, in
// f32 and f64, with and without a mask, on 1-, 2- and 3-D grids, as a
// strided view, and row-wise: the device branches must not have narrowed what
// a CPU field may be. Row values are checked against one forward per row (the
// forward_rows contract), gradients against central differences in f64.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "nefi/losses/every_loss.h"
#include "nefi/losses/loss.h"

namespace {

using nefi_test::every_loss;
using nefi_test::LossCase;

struct Problem {
  nefi::FieldMap fields;
  nefi::Measurement obs;
  nefi::Domain domain;
  nefi::LossContext context(const fk::Tensor& x) {
    fields["x"] = x;
    return {&fields, x, &obs, &domain, nullptr, 0, 0, 1.0};
  }
};

Problem problem(const fk::Dims& shape, const LossCase& c, fk::DType dt, bool masked,
                uint64_t seed) {
  const nefi_test::LossInputs in = nefi_test::loss_inputs(shape, c.positive, seed);
  Problem p;
  p.obs.data = in.obs.to(dt);
  if (masked) p.obs.mask = in.mask.to(dt);
  p.obs.noise_std = in.noise_std;
  p.domain = nefi_test::loss_domain(shape);
  p.fields["x"] = in.x.to(dt);
  return p;
}

std::string label(const LossCase& c, fk::DType dt, bool masked, const fk::Dims& shape) {
  return c.label + " " + fk::name(dt) + (masked ? " masked " : " ") + shape.str();
}

TEST(NefiLossDispatch, EveryLossTakesEveryCpuInput) {
  for (const LossCase& c : every_loss())
    for (fk::DType dt : {fk::DType::F32, fk::DType::F64})
      for (bool masked : {false, true})
        for (const fk::Dims& shape : nefi_test::loss_grids()) {
          SCOPED_TRACE(label(c, dt, masked, shape));
          Problem p = problem(shape, c, dt, masked, 5);
          fk::Tensor x = p.fields["x"].detach().set_requires_grad(true);
          const fk::Tensor v = c.loss->forward(p.context(x));
          ASSERT_EQ(v.numel(), 1);
          EXPECT_EQ(v.dtype(), dt);
          EXPECT_TRUE(std::isfinite(v.item()));
          v.backward();
          ASSERT_TRUE(x.grad().defined());
          EXPECT_EQ(x.grad().shape(), shape);
          for (double g : x.grad().to_vector<double>()) ASSERT_TRUE(std::isfinite(g));
        }
}

// A transposed (non-contiguous) field and prediction give the values of
// their contiguous copies.
TEST(NefiLossDispatch, StridedViewsAreTaken) {
  for (const LossCase& c : every_loss()) {
    SCOPED_TRACE(c.label);
    Problem p = problem({6, 9}, c, fk::DType::F64, true, 9);
    const fk::Tensor base = p.fields["x"].t().contiguous();  // (9, 6)
    const fk::Tensor view = base.t();                        // (6, 9), strided
    ASSERT_FALSE(view.is_contiguous());
    const double a = c.loss->forward(p.context(view)).item();
    const double b = c.loss->forward(p.context(view.contiguous())).item();
    EXPECT_NEAR(a, b, 1e-12 * std::abs(b));
  }
}

// forward_rows on 3 stacked problems: row b is forward on problem b.
TEST(NefiLossDispatch, RowsMatchOneForwardPerProblem) {
  for (const LossCase& c : every_loss()) {
    if (!c.has_rows) continue;
    for (bool masked : {false, true})
      for (const fk::Dims& shape : nefi_test::loss_grids()) {
        SCOPED_TRACE(label(c, fk::DType::F64, masked, shape));
        std::vector<Problem> ps;
        std::vector<fk::Tensor> xs, ys, ws;
        std::vector<double> expect;
        for (uint64_t b = 0; b < 3; ++b) {
          ps.push_back(problem(shape, c, fk::DType::F64, masked, 20 + b));
          expect.push_back(c.loss->forward(ps.back().context(ps.back().fields["x"])).item());
          xs.push_back(ps.back().fields["x"]);
          ys.push_back(ps.back().obs.data);
          if (masked) ws.push_back(ps.back().obs.mask);
        }
        nefi::FieldMap fields{{"x", fk::stack(xs, 0)}};
        nefi::BatchLossContext bc;
        bc.fields = &fields;
        bc.pred = fields["x"];
        bc.obs = fk::stack(ys, 0);
        if (masked) bc.mask = fk::stack(ws, 0);
        bc.noise_std = std::vector<double>(3, ps[0].obs.noise_std);
        bc.domain = &ps[0].domain;
        const std::vector<double> got = c.loss->forward_rows(bc).to_vector<double>();
        ASSERT_EQ(got.size(), 3u);
        for (int b = 0; b < 3; ++b) EXPECT_NEAR(got[b], expect[b], 1e-12 * std::abs(expect[b]));
      }
  }
}

// The CPU gradient of every loss against central differences in f64 (the
// reference the device parity test's CPU side rests on).
TEST(NefiLossDispatch, GradientsMatchCentralDifferences) {
  for (const LossCase& c : every_loss()) {
    SCOPED_TRACE(c.label);
    Problem p = problem({4, 5}, c, fk::DType::F64, true, 31);
    fk::Tensor x = p.fields["x"].detach().set_requires_grad(true);
    c.loss->forward(p.context(x)).backward();
    const std::vector<double> g = x.grad().to_vector<double>();
    std::vector<double> xv = p.fields["x"].to_vector<double>();
    const double h = 1e-6;
    for (size_t i = 0; i < xv.size(); i += 3) {
      auto at = [&](double d) {
        std::vector<double> v = xv;
        v[i] += d;
        fk::autograd::NoGradGuard ng;
        return c.loss->forward(p.context(fk::from_vector(v, fk::Dims{4, 5}))).item();
      };
      const double fd = (at(h) - at(-h)) / (2 * h);
      EXPECT_NEAR(g[i], fd, 1e-5 * (1 + std::abs(fd))) << "cell " << i;
    }
  }
}

}  // namespace
