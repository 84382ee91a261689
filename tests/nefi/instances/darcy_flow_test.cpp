#include <gtest/gtest.h>

#include <cmath>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/thread_count.h"
#include "nefi/instances/bad_value_errors.h"
#include "nefi/instances/darcy_model.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

nefi::darcy::Layout layout() {
  nefi::darcy::Layout w;
  w.n_configs = 4;
  w.n_sensors = 6;
  w.native = 16;
  return w;
}

// Each configuration injects and withdraws the same rate (a compatible
// no-flow problem), with the wells 0.6 L apart through the centre; gauges
// within 1.5 cells of a well are dropped, the others kept.
TEST(NefiDarcyFlow, WellsAndGauges) {
  const auto w = layout();
  const auto b = nefi::darcy::well_rhs(w, 16);
  const double cell = 1.0 / 16;
  for (int64_t c = 0; c < w.n_configs; ++c) {
    double sum = 0, pos = 0;
    for (int64_t i = 0; i < 256; ++i) {
      sum += b[c * 256 + i] * cell * cell;
      pos += std::max(0.0, b[c * 256 + i]) * cell * cell;
    }
    EXPECT_NEAR(sum, 0.0, 1e-12) << c;
    EXPECT_NEAR(pos, 1.0, 1e-12) << c;
    const auto ws = nefi::darcy::wells(w, c);
    EXPECT_NEAR(
        std::hypot(ws[0].position[0] - ws[1].position[0], ws[0].position[1] - ws[1].position[1]),
        0.6, 1e-12);
  }
  const auto mask = nefi::darcy::gauge_mask(w);
  for (int64_t c = 0; c < w.n_configs; ++c)
    for (int64_t g = 0; g < 36; ++g) {
      const double x = (g / 6 + 0.5) / 6, y = (g % 6 + 0.5) / 6;
      bool near = false;
      for (const auto& well : nefi::darcy::wells(w, c))
        near = near || std::hypot(x - well.position[0], y - well.position[1]) < 1.5 * cell;
      EXPECT_EQ(mask[c * 36 + g], near ? 0.0 : 1.0);
    }
}

// The gauge rows interpolate linear pressures exactly (bilinear samples),
// referenced to the kept gauges' mean; dropped gauges read nothing.
TEST(NefiDarcyFlow, GaugeMatrixIsExactForLinearPressure) {
  const auto w = layout();
  const int64_t m = 20;
  const auto mat = nefi::darcy::gauge_matrix(w, m);
  const auto mask = nefi::darcy::gauge_mask(w);
  std::vector<double> u(m * m);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) u[i * m + j] = 2.0 * (i + 0.5) / m - 0.5 * (j + 0.5) / m;
  for (int64_t c = 0; c < w.n_configs; ++c) {
    double mean = 0, kept = 0;
    for (int64_t g = 0; g < 36; ++g)
      if (mask[c * 36 + g] > 0) {
        mean += 2.0 * (g / 6 + 0.5) / 6 - 0.5 * (g % 6 + 0.5) / 6;
        kept += 1;
      }
    mean /= kept;
    for (int64_t g = 0; g < 36; ++g) {
      double got = 0;
      for (int64_t k = 0; k < m * m; ++k) got += mat[(c * 36 + g) * m * m + k] * u[k];
      const double want =
          mask[c * 36 + g] > 0 ? 2.0 * (g / 6 + 0.5) / 6 - 0.5 * (g % 6 + 0.5) / 6 - mean : 0.0;
      EXPECT_NEAR(got, want, 1e-12) << c << " " << g;
    }
  }
}

// Scenes: seeded, within the head's bounds, the channels class has its
// +2.5 channels; the generator is a different (finer, f64) solve than the
// inversion operator, close to it at the true field.
TEST(NefiDarcyFlow, ScenesAndDataGenerator) {
  const nefi::darcy::LogPermeability a("smooth", 1.0, 0.1, 0.1, 3), b("smooth", 1.0, 0.1, 0.1, 3);
  EXPECT_EQ(a.render(8, 2, -3, 4), b.render(8, 2, -3, 4));
  const auto ch = nefi::darcy::LogPermeability("channels", 1.0, 0.12, 0.16, 1).render(32, 2, -3, 4);
  EXPECT_GT(*std::max_element(ch.begin(), ch.end()) - *std::min_element(ch.begin(), ch.end()), 2.0);
  EXPECT_THROW(nefi::darcy::LogPermeability("layers", 1.0, 0.1, 0.1, 0), fk::Error);

  auto inst = nefi::find_instance("darcy_flow");
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("darcy_flow_smoke.yaml"));
  c.config.set("noise_std", "0");
  auto s = inst->setup(c.config, "grid", 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_NE(std::string(nefi::darcy_flow_data_tag()), s->problem.op->fidelity_tag());
  const auto clean = s->measurement.data.to_vector<double>();
  const auto mask = s->measurement.mask.to_vector<double>();
  const auto model = s->problem.op->apply(s->gt.to(fk::DType::F32)).to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < clean.size(); ++i) {
    diff += mask[i] * (clean[i] - model[i]) * (clean[i] - model[i]);
    scale += mask[i] * clean[i] * clean[i];
  }
  EXPECT_GT(std::sqrt(diff / scale), 1e-4);
  EXPECT_LT(std::sqrt(diff / scale), 0.2);
}

TEST(NefiDarcyFlow, BadValuesAreOneLineErrorsNamingTheKey) {
  auto inst = nefi::find_instance("darcy_flow");
  const nefi::test::BadValue bad_values[] = {{"channel_width", "[0.2]"}, {"scene", "layers"},
                                             {"n_configs", "0"},         {"n_sensors", "1"},
                                             {"log_k_min", "1"},         {"rate", "0"},
                                             {"face_mean", "geometric"}};
  nefi::Params base = inst->default_config();
  base.set("n", "16");
  nefi::test::expect_bad_values_name_their_key(
      base, bad_values, [&](const nefi::Params& p) { inst->make_measurement(p, 0); });
}

// The smoke preset over seeds 0-2 (well under a second of CPU each): floors
// below the measured values (see configs/darcy_flow_smoke.yaml).
TEST(NefiDarcyFlow, SmokeQualityFloor) {
  const fk::test::ThreadCount one_thread(1);
  nefi::RunConfig c = nefi::load_run_config_file(nefi::test::config_path("darcy_flow_smoke.yaml"));
  auto inst = nefi::find_instance("darcy_flow");
  const double neural[3] = {21.0, 23.5, 21.0}, grid[3] = {21.0, 22.0, 20.0};
  for (int s = 0; s < 3; ++s) {
    EXPECT_GT(inst->run(c.config, "neural", s, {}).metrics.at("psnr"), neural[s]) << s;
    EXPECT_GT(inst->run(c.config, "grid", s, {}).metrics.at("psnr"), grid[s]) << s;
  }
}

}  // namespace
