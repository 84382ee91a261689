// nefi run of a problem with several fields (nv_relaxometry: rho and the
// Larmor map omega_L) writes each one, <method>-<field>.npy, and names them in
// metrics.json; a later run into the folder removes them with the rest of
// the earlier run's outputs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "fk/io/npy.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

TEST(RunFieldsCli, EveryFieldOfAMethodIsWritten) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const auto nefi = fieldkit_test::sibling_binary("nefi");
  const auto dir = nefi::test::fresh_dir("run_fields");
  auto res = fieldkit_test::run_cli(
      nefi, "run nv_relaxometry --smoke --smoke-steps 8 --no-plot --out " + dir.string(),
      nefi::test::scratch());
  ASSERT_EQ(res.status, 0) << res.err;
  const auto j = nlohmann::json::parse(std::ifstream(dir / "metrics.json"));
  EXPECT_EQ(j["methods"]["neural"]["fields"], nlohmann::json({"omega_L", "rho"}));
  const fk::Tensor rho = fk::read_npy((dir / "neural-rho.npy").string()),
                   larmor = fk::read_npy((dir / "neural-omega_L.npy").string());
  EXPECT_EQ(rho.to_vector<double>(),
            fk::read_npy((dir / "neural.npy").string()).to_vector<double>());
  EXPECT_EQ(larmor.shape(), rho.shape());
  // larmor_mae scores this map: within the Larmor band [1.5, 2.5] GHz.
  for (double w : larmor.to_vector<double>()) {
    EXPECT_GE(w, 1.5);
    EXPECT_LE(w, 2.5);
  }
  // A one-field run into the folder leaves none of them behind.
  res = fieldkit_test::run_cli(nefi,
                               "run toy1d --smoke --smoke-steps 4 --no-plot --out " + dir.string(),
                               nefi::test::scratch());
  ASSERT_EQ(res.status, 0) << res.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "neural-rho.npy"));
  EXPECT_FALSE(std::filesystem::exists(dir / "neural-omega_L.npy"));
}

}  // namespace
