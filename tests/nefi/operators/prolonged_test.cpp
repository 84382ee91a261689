// prolong and ProlongedOperator: the prolongation against the area
// resampling it applies, f64 gradcheck and the adjoint dot test of its
// backward, and a function model seen from a coarser grid.
#include "nefi/operators/prolonged.h"

#include <gtest/gtest.h>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/byop/matrix_model.h"
#include "nefi/resample.h"

namespace {

TEST(NefiProlonged, ProlongIsTheAreaResamplingWithItsTransposeBackward) {
  for (const auto& [coarse, fine] :
       {std::pair{fk::Dims{3}, fk::Dims{7}}, std::pair{fk::Dims{2, 3}, fk::Dims{4, 5}}}) {
    const fk::Tensor x = fk::test::random_tensor(coarse, fk::DType::F64, -1, 1, 3);
    const auto y = nefi::prolong(x, fine).to_vector<double>();
    const auto ref = nefi::area_resample(x.to_vector<double>(), coarse, fine);
    EXPECT_LT(fk::test::max_abs_diff(y, ref), 1e-15) << fine.str();
    EXPECT_GRADCHECK([&](const std::vector<fk::Tensor>& in) { return nefi::prolong(in[0], fine); },
                     std::vector<fk::Tensor>{x.detach().set_requires_grad(true)});
    // <P x, g> = <x, P^T g> with P^T from autograd.
    fk::Tensor xr = x.detach().set_requires_grad(true);
    const fk::Tensor g = fk::test::random_tensor(fine, fk::DType::F64, -1, 1, 4);
    const fk::Tensor pt = fk::autograd::grad({nefi::prolong(xr, fine)}, {g}, {xr})[0];
    double lhs = 0, rhs = 0;
    const auto gv = g.to_vector<double>(), xv = x.to_vector<double>(), pv = pt.to_vector<double>();
    for (size_t i = 0; i < gv.size(); ++i) lhs += y[i] * gv[i];
    for (size_t i = 0; i < xv.size(); ++i) rhs += xv[i] * pv[i];
    EXPECT_NEAR(lhs, rhs, 1e-12);
  }
  const std::string e = fk::test::error_of([] { (void)nefi::prolong(fk::zeros({5}), {4}); });
  EXPECT_NE(e.find("no finer than [4]"), std::string::npos) << e;
}

TEST(NefiProlonged, AFunctionModelSeenFromACoarserGrid) {
  const fk::Tensor a = fk::test::random_tensor({5, 8}, fk::DType::F64, -1, 1, 7);
  const auto op = nefi::matrix_operator(a, {8}, {5});
  const auto coarse = op->at_resolution({4});
  EXPECT_EQ(coarse->output_shape({4}), fk::Dims{5});  // the measurement keeps its shape
  EXPECT_EQ(coarse->homogeneity(), 1.0);
  const fk::Tensor x = fk::test::random_tensor({4}, fk::DType::F64, -1, 1, 8);
  const auto want = op->apply(nefi::prolong(x, {8})).to_vector<double>();
  EXPECT_LT(fk::test::max_abs_diff(coarse->apply(x).to_vector<double>(), want), 1e-14);
  EXPECT_GRADCHECK([&](const std::vector<fk::Tensor>& in) { return coarse->apply(in[0]); },
                   std::vector<fk::Tensor>{x.detach().set_requires_grad(true)});
  EXPECT_EQ(coarse->at_resolution({8}).get(), op.get());  // back at its own grid
}

// The prolongation is a host step: a device solve refuses a coarse stage
// seen through it, by name (the solver checks each stage's operator).
TEST(NefiProlonged, ADeviceSolveRefusesTheProlongedModel) {
  const fk::Tensor a = fk::test::random_tensor({5, 8}, fk::DType::F64, -1, 1, 7);
  const auto op = nefi::matrix_operator(a, {8}, {5});
  const std::string r = nefi::device_solve_refusal(*op->at_resolution({4}), fk::cuda_device(0));
  EXPECT_NE(r.find("prolongation"), std::string::npos) << r;
}

}  // namespace
