// data_fit: the mask-weighted RMSE, the PSNR against the observed peak and
// RMSE / σ, by hand; and what `nefi run` writes of it.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "fk/factory.h"
#include "nefi/diagnostics/data_fit.h"
#include "nefi/test_files.h"

namespace {

TEST(NefiDataFit, MaskWeightedAgainstTheObservedPeak) {
  nefi::Measurement m;
  m.data = fk::from_vector(std::vector<double>{1, -3, 2, 10}, fk::Dims{4});
  m.mask = fk::from_vector(std::vector<double>{1, 1, 1, 0}, fk::Dims{4});
  const fk::Tensor p = fk::from_vector(std::vector<double>{1, -1, 2, -50}, fk::Dims{4});
  auto fit = nefi::diagnostics::data_fit(m, p);
  ASSERT_TRUE(fit);
  EXPECT_NEAR(fit->rmse, std::sqrt(4.0 / 3), 1e-12);  // the unobserved cell counts nowhere
  EXPECT_NEAR(fit->psnr_db, 20 * std::log10(3 / std::sqrt(4.0 / 3)), 1e-12);
  EXPECT_FALSE(fit->rmse_over_sigma);  // σ unknown
  m.noise_std = 0.5;
  fit = nefi::diagnostics::data_fit(m, p);
  EXPECT_NEAR(*fit->rmse_over_sigma, std::sqrt(4.0 / 3) / 0.5, 1e-12);
  EXPECT_FALSE(nefi::diagnostics::data_fit(m, fk::Tensor()));                // a direct method
  EXPECT_TRUE(std::isinf(nefi::diagnostics::data_fit(m, m.data)->psnr_db));  // an exact fit
}

TEST(NefiDataFit, RunWritesItPerMethod) {
  namespace fs = std::filesystem;
  const fs::path nefi_bin = fieldkit_test::sibling_binary("nefi");
  if (!fs::exists(nefi_bin)) GTEST_SKIP() << "nefi_cli not built";
  const fs::path out = nefi::test::scratch() / "nefi_run_data_fit";
  const auto r = fieldkit_test::run_cli(
      nefi_bin, "run toy1d --smoke --smoke-steps 4 --no-plot -m neural -o " + out.string(),
      out.parent_path());
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(std::ifstream(out / "metrics.json"));
  const auto& fit = j["methods"]["neural"]["data_fit"];
  ASSERT_TRUE(fit.is_object()) << j.dump();
  EXPECT_GT(fit["rmse"].get<double>(), 0);
  EXPECT_TRUE(std::isfinite(fit["data_psnr"].get<double>()));
  ASSERT_TRUE(fit.contains("discrepancy_ratio"));  // toy1d knows its noise level
  EXPECT_GT(fit["discrepancy_ratio"].get<double>(), 0);
}

}  // namespace
