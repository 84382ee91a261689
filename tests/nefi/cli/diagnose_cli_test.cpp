// nefi diagnose on toy1d (a Gaussian blur: every singular value <= 1, the
// first the kernel's sum on the interior) at the start and at the solution,
// and one-line errors; every instance whose gradient methods expose their
// inverse problem diagnoses at a tiny Krylov size.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

using nefi::test::nefi_built;
using nefi::test::nefi_stdout;
namespace fs = std::filesystem;

TEST(DiagnoseCli, SmokeAtStartAndSolution) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const fs::path a = nefi::test::fresh_dir("diagnose_start"),
                 b = nefi::test::fresh_dir("diagnose_solve");
  const auto r = nefi_stdout("diagnose toy1d --smoke -o " + a.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("# Diagnostics: toy1d"), std::string::npos);
  for (const char* f : {"diagnostics.md", "diagnostics.json", "sensitivity.npy", "diagnostics.png"})
    EXPECT_TRUE(fs::exists(a / f)) << f;
  const auto j = nlohmann::json::parse(nefi::test::slurp(a / "diagnostics.json"));
  EXPECT_EQ(j["settings"]["k"], 4);  // --smoke: k <= 4, probes <= 8, n-iter <= 12
  EXPECT_EQ(j["settings"]["probes"], 8);
  // ... unless given: the help's own example keeps its --k and --n-iter.
  const fs::path c = nefi::test::fresh_dir("diagnose_given");
  ASSERT_EQ(
      nefi_stdout("diagnose toy1d --smoke --k 6 --n-iter 16 --no-plot -o " + c.string()).status, 0);
  const auto g = nlohmann::json::parse(nefi::test::slurp(c / "diagnostics.json"));
  EXPECT_EQ(g["settings"]["k"], 6);
  EXPECT_EQ(g["settings"]["n_iter"], 16) << g["settings"].dump();
  EXPECT_EQ(g["settings"]["probes"], 8);
  EXPECT_EQ(j["jvp_mode"], "exact (linear operator)");
  const auto sv = j["singular_values"].get<std::vector<double>>();
  ASSERT_EQ(sv.size(), 4u);
  EXPECT_LE(sv[0], 1.0 + 1e-5);  // a unit-sum non-negative kernel never amplifies
  EXPECT_GT(sv[0], 0.95);
  for (size_t i = 1; i < sv.size(); ++i) EXPECT_LE(sv[i], sv[i - 1]);
  const double start_ratio = j["data_fit"]["misfit_ratio"];
  ASSERT_EQ(nefi_stdout("diagnose toy1d --smoke --solve --no-plot -o " + b.string()).status, 0);
  const auto s = nlohmann::json::parse(nefi::test::slurp(b / "diagnostics.json"));
  EXPECT_FALSE(fs::exists(b / "diagnostics.png"));
  EXPECT_NE(s["at"].get<std::string>().find("solution"), std::string::npos);
  EXPECT_LT(s["data_fit"]["misfit_ratio"].get<double>(), start_ratio / 5);
  EXPECT_FALSE(s["sensitivity"]["exact"].get<bool>());
  ASSERT_EQ(
      nefi_stdout("diagnose toy1d --smoke --exact-sensitivity --no-plot -o " + b.string()).status,
      0);
  EXPECT_TRUE(
      nlohmann::json::parse(nefi::test::slurp(b / "diagnostics.json"))["sensitivity"]["exact"]
          .get<bool>());
  EXPECT_FALSE(s.contains("hessian"));
  // --hessian K: the loss Hessian's ends in the report and the JSON.
  const auto h =
      nefi_stdout("diagnose toy1d --smoke --solve --hessian 2 --no-plot -o " + b.string());
  ASSERT_EQ(h.status, 0) << h.out;
  EXPECT_NE(h.out.find("## Loss Hessian in the field's"), std::string::npos) << h.out;
  const auto hj = nlohmann::json::parse(nefi::test::slurp(b / "diagnostics.json"));
  ASSERT_EQ(hj["hessian"]["largest"].size(), 2u) << hj.dump();
  EXPECT_GT(hj["hessian"]["largest"][0].get<double>(), 0.0);
  EXPECT_LE(hj["hessian"]["lanczos_steps"].get<int>(), 12);  // --smoke's cap
  EXPECT_EQ(hj["settings"]["hessian_k"], 2);
  // A --no-plot rerun into a folder with a figure removes it (it described
  // another run); a report that cannot be written fails the command.
  ASSERT_EQ(nefi_stdout("diagnose toy1d --smoke --no-plot -o " + a.string()).status, 0);
  EXPECT_FALSE(fs::exists(a / "diagnostics.png"));
  fs::remove(a / "diagnostics.md");
  fs::create_directories(a / "diagnostics.md");
  const auto blocked = nefi_stdout("diagnose toy1d --smoke --no-plot -o " + a.string());
  EXPECT_EQ(blocked.status, 2) << blocked.out;
}

class DiagnoseInstanceCli : public ::testing::TestWithParam<std::string> {};

TEST_P(DiagnoseInstanceCli, SmokeAtStart) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const std::string name = GetParam();
  const fs::path out = nefi::test::fresh_dir("diagnose_" + name);
  const auto r = nefi_stdout("diagnose " + name +
                             " --smoke --k 2 --n-iter 4 --probes 2 --no-plot -o " + out.string());
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("# Diagnostics: " + name), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(nefi::test::slurp(out / "diagnostics.json"));
  EXPECT_EQ(j["instance"], name);
  const auto sv = j["singular_values"].get<std::vector<double>>();
  ASSERT_EQ(sv.size(), 2u);
  EXPECT_GT(sv[1], 0.0);  // every one of these operators sees the field
  EXPECT_LE(sv[1], sv[0] * (1 + 1e-6));
  EXPECT_TRUE(fs::exists(out / "sensitivity.npy"));
}

INSTANTIATE_TEST_SUITE_P(Instances, DiagnoseInstanceCli,
                         ::testing::Values("poisson_source", "sparse_view_ct", "holography",
                                           "deconvolution3d", "ct3d", "current_density",
                                           "reaction_diffusion", "wave_fwi", "photoacoustic3d",
                                           "thermal_tomography", "diffraction_tomography",
                                           "nv_relaxometry", "eit", "darcy_flow", "dot3d"));

TEST(DiagnoseCli, BadInputPrintsOneLine) {
  if (!nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  nefi::test::expect_one_line_errors(
      {{"diagnose toy1d --k 0", "--k"},
       {"diagnose toy1d --k 8 --n-iter 4", "--n-iter"},
       {"diagnose toy1d --probes 0", "--probes"},
       {"diagnose toy1d --hessian 4 --hessian-iter 2", "--hessian"},
       {"diagnose toy1d --method admm", "admm"},
       {"diagnose deconvolution --method wiener", "wiener"},
       {"diagnose sparse_view_ct --method fbp", "fbp"},
       {"diagnose thermal_tomography --method tsr", "tsr"},
       {"diagnose holography --method gerchberg_saxton", "gerchberg_saxton"},
       {"diagnose toy1d --set bogus=1", "bogus"},
       {"diagnose toy1d --device cuda:99", "cuda:99"},
       {"diagnose toy1d --device tpu", "--device: expected cpu or cuda[:N], got 'tpu'"},
       {"diagnose", "target"}},
      nefi::test::scratch());
}

}  // namespace
