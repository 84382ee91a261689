#include "nefi/instances/nv_larmor_profile.h"

#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

nefi::NVPhysics physics() {
  nefi::NVPhysics p;
  for (int f = 0; f < 30; ++f) p.freqs.push_back(1.0 + 2.0 * f / 29);
  p.z0 = 40;
  p.larmor_default = 2.0;
  return p;
}

// Noiseless F2 data of a density with a per-pixel Larmor field: from the
// band-centre fill, the profile step recovers omega_L on the support (where
// the log misfit is then ~0), leaves the rest alone, never raises a pixel's
// misfit and returns the prediction of the new field.
TEST(NefiNVLarmorProfile, RecoversThePerPixelLarmorFieldOfF2Data) {
  const int64_t n = 12;
  nefi::Domain d({n, n}, {240.0, 240.0});
  for (nefi::NVMode mode : {nefi::NVMode::kF2, nefi::NVMode::kF1}) {
    auto op = std::make_shared<nefi::NVOperator>(d, physics(), mode);
    fk::Generator g(3);
    const fk::Tensor rho = fk::uniform({n, n}, 0.0, 1.0, {fk::DType::F64}, &g);
    const fk::Tensor wl = fk::uniform({n, n}, 1.55, 2.45, {fk::DType::F64}, &g);
    nefi::Measurement m;
    m.data = op->forward({{"rho", rho}, {"omega_L", wl}});
    nefi::FieldMap fields{{"rho", rho}, {"omega_L", fk::full({n, n}, 2.0, {fk::DType::F64})}};
    fk::Tensor pred = op->forward(fields);
    const auto info = nefi::larmor_profile(op, {1.5, 2.5, 0.3, 1e-10})->apply(fields, pred, m);
    const auto r = rho.to_vector<double>(), want = wl.to_vector<double>();
    const auto got = fields.at("omega_L").to_vector<double>();
    double rmax = 0;
    for (double v : r) rmax = std::max(rmax, v);
    int64_t support = 0;
    for (int64_t k = 0; k < n * n; ++k) {
      if (r[k] > 0.3 * rmax) {
        ++support;
        EXPECT_NEAR(got[k], want[k], 1e-6) << "pixel " << k;
      } else {
        EXPECT_EQ(got[k], 2.0) << "pixel " << k;
      }
    }
    EXPECT_EQ(info.at("larmor_profile_pixels"), static_cast<double>(support));
    EXPECT_GT(info.at("larmor_profile_misfit_before"), 1e-2);
    EXPECT_LT(info.at("larmor_profile_misfit_after"), 1e-9);
    const auto p = pred.to_vector<double>();
    const auto q = op->forward(fields).to_vector<double>();
    for (size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(p[i], q[i], 1e-6 * std::abs(q[i]) + 1e-12);
  }
}

// A Larmor frequency outside the band cannot be reached: the step keeps the
// band edge (the best it can) and no pixel's misfit goes up.
TEST(NefiNVLarmorProfile, OutOfBandTruthAndBadOptions) {
  const int64_t n = 6;
  nefi::Domain d({n, n}, {120.0, 120.0});
  auto op = std::make_shared<nefi::NVOperator>(d, physics(), nefi::NVMode::kF2);
  const fk::Tensor rho = fk::full({n, n}, 1.0, {fk::DType::F64});
  nefi::Measurement m;
  m.data = op->forward({{"rho", rho}, {"omega_L", fk::full({n, n}, 2.8, {fk::DType::F64})}});
  nefi::FieldMap fields{{"rho", rho}, {"omega_L", fk::full({n, n}, 2.4, {fk::DType::F64})}};
  fk::Tensor pred = op->forward(fields);
  const auto info = nefi::larmor_profile(op, {1.5, 2.5, 0.3, 1e-10})->apply(fields, pred, m);
  for (double v : fields.at("omega_L").to_vector<double>()) EXPECT_NEAR(v, 2.5, 1e-6);
  EXPECT_LE(info.at("larmor_profile_misfit_after"), info.at("larmor_profile_misfit_before"));
  EXPECT_THROW(nefi::larmor_profile(op, {2.5, 1.5, 0.3, 1e-10}), fk::Error);
  EXPECT_THROW(nefi::larmor_profile(op, {1.5, 2.5, 1.0, 1e-10}), fk::Error);
  EXPECT_THROW(nefi::larmor_profile(nullptr, {}), fk::Error);
  nefi::FieldMap no_larmor{{"rho", rho}};
  EXPECT_THROW(nefi::larmor_profile(op, {})->apply(no_larmor, pred, m), fk::Error);
}

// The instance's nv_axis key: normalised on use (a scaled axis gives the same
// data), a tilted axis changes them, and a malformed one names the key.
TEST(NefiNVRelaxometry, NvAxisKeySetsTheSensedProjection) {
  auto inst = nefi::find_instance("nv_relaxometry");
  nefi::RunConfig rc =
      nefi::load_run_config_file(nefi::test::config_path("nv_relaxometry_smoke.yaml"));
  nefi::Params p = rc.config;
  p.set("noise_std", "0");
  const auto base = inst->make_measurement(p, 0).first.data.to_vector<double>();
  p.set("nv_axis", "[0, 0, 3]");
  const auto scaled = inst->make_measurement(p, 0).first.data.to_vector<double>();
  p.set("nv_axis", "[1, 0, 1]");
  const auto tilted = inst->make_measurement(p, 0).first.data.to_vector<double>();
  double same = 0, diff = 0, scale = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    same = std::max(same, std::abs(scaled[i] - base[i]));
    diff = std::max(diff, std::abs(tilted[i] - base[i]));
    scale = std::max(scale, std::abs(base[i]));
  }
  EXPECT_LT(same, 1e-6 * scale);
  EXPECT_GT(diff, 1e-2 * scale);
  const nefi::test::BadValue bad_axes[] = {{"nv_axis", "[0, 0, 0]"}, {"nv_axis", "[1, 0]"}};
  nefi::test::expect_bad_values_name_their_key(
      p, bad_axes, [&](const nefi::Params& q) { inst->make_measurement(q, 0); });
}

}  // namespace
