// run.data: a measured dataset in place of an instance's synthetic one. Fed
// the synthetic measurement back, a method gives the synthetic run's
// reconstruction bit for bit, with no ground truth and so no field metrics;
// data of the wrong shape, non-finite values, bad masks and a dataset where
// a ground truth is needed are errors naming the key.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cli_run.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "fk/ops/binary/binary.h"
#include "fk/test_util.h"
#include "nefi/bench/campaign.h"
#include "nefi/instances/instance.h"
#include "nefi/io/run_config.h"
#include "nefi/test_files.h"

namespace {

namespace fs = std::filesystem;

using fk::test::error_of;

bool same_bits(const fk::Tensor& a, const fk::Tensor& b) {
  return a.shape() == b.shape() && a.to_vector<double>() == b.to_vector<double>();
}

TEST(NefiMeasuredData, TheSyntheticMeasurementGivesTheSyntheticReconstruction) {
  nefi::RunConfig c = nefi::default_run_config("deconvolution");
  nefi::apply_set(c, "n=32");
  nefi::apply_set(c, "steps=[6, 6]");
  const nefi::InstancePtr inst = nefi::find_instance("deconvolution");
  const nefi::RunOutput synthetic = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  const nefi::RunOutput wiener = inst->run(c.config, "wiener", 0, nefi::solver_options(c));
  ASSERT_TRUE(synthetic.gt.defined());
  const fs::path data = nefi::test::scratch() / "measured_deconvolution.npy";
  fk::write_npy(data.string(), synthetic.measurement.data);

  nefi::apply_set(c, "run.data=" + data.string());
  const nefi::RunOutput measured = inst->run(c.config, "neural", 0, nefi::solver_options(c));
  EXPECT_TRUE(same_bits(measured.reconstruction, synthetic.reconstruction));
  EXPECT_FALSE(measured.gt.defined());
  EXPECT_TRUE(measured.metrics.empty());
  EXPECT_FALSE(measured.measurement.has_noise());  // not given: unknown

  // Other data, another solve: the problem trains on the file, not the scene.
  const fs::path half = nefi::test::scratch() / "measured_deconvolution_half.npy";
  fk::write_npy(half.string(), synthetic.measurement.data * 0.5);
  nefi::RunConfig h = c;
  nefi::apply_set(h, "run.data=" + half.string());
  const nefi::RunOutput other = inst->run(h.config, "neural", 0, nefi::solver_options(h));
  EXPECT_FALSE(same_bits(other.reconstruction, synthetic.reconstruction));
  EXPECT_TRUE(same_bits(other.measurement.data, synthetic.measurement.data * 0.5));

  // A direct method sees the same data; Wiener needs the noise level given.
  EXPECT_NE(error_of([&] {
              inst->run(c.config, "wiener", 0, nefi::solver_options(c));
            }).find("noise_std"),
            std::string::npos);
  nefi::apply_set(c, "run.noise_std=" + fmt::format("{}", synthetic.measurement.noise_std));
  const nefi::RunOutput direct = inst->run(c.config, "wiener", 0, nefi::solver_options(c));
  EXPECT_TRUE(same_bits(direct.reconstruction, wiener.reconstruction));
  EXPECT_EQ(direct.metrics.count("psnr"), 0u);  // its own wiener_snr only
  EXPECT_EQ(direct.metrics.at("wiener_snr"), wiener.metrics.at("wiener_snr"));
}

// The problem is built from the dataset, so what setup() derives from its
// data follows it: Poisson counts become intensities as the synthetic counts
// do, and without run.mask the instrument's own mask stays (darcy_flow's
// sensor gauge mask). Fed back the synthetic measurement, each gives the
// synthetic reconstruction bit for bit.
TEST(NefiMeasuredData, WhatSetupDerivesFromTheDataFollowsTheDataset) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"deconvolution", {"n=32", "steps=[4, 4]", "noise=poisson"}},
      {"darcy_flow", {"stage.steps=3"}}};
  for (const auto& [name, sets] : cases) {
    nefi::RunConfig c =
        nefi::load_run_config_file(nefi::test::config_path(std::string(name) + "_smoke.yaml"));
    for (const auto& a : sets) nefi::apply_set(c, a);
    const nefi::InstancePtr inst = nefi::find_instance(name);
    const nefi::RunOutput synthetic = inst->run(c.config, "neural", 0, nefi::solver_options(c));
    const fs::path data = nefi::test::scratch() / (std::string(name) + "_measured.npy");
    fk::write_npy(data.string(), synthetic.measurement.data);
    nefi::apply_set(c, "run.data=" + data.string());
    if (synthetic.measurement.has_noise())
      nefi::apply_set(c, "run.noise_std=" + fmt::format("{}", synthetic.measurement.noise_std));
    const nefi::RunOutput measured = inst->run(c.config, "neural", 0, nefi::solver_options(c));
    EXPECT_TRUE(same_bits(measured.reconstruction, synthetic.reconstruction)) << name;
    EXPECT_EQ(measured.measurement.mask.defined(), synthetic.measurement.mask.defined()) << name;
  }
}

TEST(NefiMeasuredData, BadDataAndPlacesWithoutRoomForItAreErrorsNamingTheKey) {
  const fs::path dir = nefi::test::scratch();
  const nefi::InstancePtr inst = nefi::find_instance("toy1d");
  nefi::RunConfig c = nefi::default_run_config("toy1d");
  nefi::apply_set(c, "n=16");
  nefi::apply_set(c, "steps=[2, 2]");
  auto run_with = [&](const std::vector<double>& data, const std::vector<double>& mask) {
    nefi::RunConfig r = c;
    fk::write_npy((dir / "md_data.npy").string(),
                  fk::from_vector(data, fk::Dims{static_cast<int64_t>(data.size())}));
    nefi::apply_set(r, "run.data=" + (dir / "md_data.npy").string());
    if (!mask.empty()) {
      fk::write_npy((dir / "md_mask.npy").string(),
                    fk::from_vector(mask, fk::Dims{static_cast<int64_t>(mask.size())}));
      nefi::apply_set(r, "run.mask=" + (dir / "md_mask.npy").string());
    }
    return error_of([&] { inst->run(r.config, "neural", 0, nefi::solver_options(r)); });
  };
  std::vector<double> ok(16, 0.5), ones(16, 1.0);
  EXPECT_EQ(run_with(ok, ones), "");
  const std::string shape = run_with(std::vector<double>(15, 0.5), {});
  EXPECT_NE(shape.find("run.data"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[16]"), std::string::npos) << shape;
  EXPECT_NE(shape.find("[15]"), std::string::npos) << shape;
  std::vector<double> nan = ok;
  nan[3] = std::nan("");
  EXPECT_NE(run_with(nan, {}).find("finite"), std::string::npos);
  EXPECT_NE(run_with(ok, std::vector<double>(8, 1.0)).find("run.mask"), std::string::npos);
  EXPECT_NE(run_with(ok, std::vector<double>(16, 0.0)).find("run.mask"), std::string::npos);

  nefi::RunConfig r = c;
  EXPECT_NE(error_of([&] { nefi::apply_set(r, "run.noise_std=-1"); }).find("run.noise_std"),
            std::string::npos);
  nefi::apply_set(r, "run.noise_std=0.1");
  EXPECT_NE(error_of([&] { nefi::solver_options(r); }).find("run.data"), std::string::npos);
  nefi::apply_set(r, "run.data=" + (dir / "md_missing.npy").string());
  EXPECT_NE(error_of([&] { nefi::solver_options(r); }).find("md_missing.npy"), std::string::npos);

  // Another file's bytes under the same name: another run folder.
  const std::string path = (dir / "md_hash.npy").string();
  nefi::RunConfig h = c;
  nefi::apply_set(h, "run.data=" + path);
  fk::write_npy(path, fk::from_vector(ok, fk::Dims{16}));
  const std::string first = nefi::config_hash(h);
  fk::write_npy(path, fk::from_vector(ones, fk::Dims{16}));
  EXPECT_NE(nefi::config_hash(h), first);

  // A benchmark scores against ground truths: it refuses a dataset.
  nefi::bench::CampaignSpec spec;
  spec.target = "toy1d";
  spec.sets = {"run.data=" + path};
  EXPECT_NE(error_of([&] { nefi::bench::make_protocol(spec); }).find("run.data"),
            std::string::npos);
}

// The run folder of a measured dataset: its fields, history, measurement and
// data fit; no ground_truth.npy and no panel (there is no truth to set
// beside the fields).
TEST(NefiMeasuredData, RunFolderWithoutTheTruth) {
  const fs::path nefi_bin = fieldkit_test::sibling_binary("nefi");
  if (!fs::exists(nefi_bin)) GTEST_SKIP() << "nefi_cli not built";
  const fs::path dir = nefi::test::scratch() / "nefi_measured_run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto synthetic = fieldkit_test::run_cli(
      nefi_bin, "run toy1d --smoke --smoke-steps 4 -m neural -o " + (dir / "s").string(), dir);
  ASSERT_EQ(synthetic.status, 0) << synthetic.err;
  const auto measured = fieldkit_test::run_cli(
      nefi_bin,
      "run toy1d --smoke --smoke-steps 4 -m neural --set run.data=" +
          (dir / "s" / "measurement.npy").string() + " -o " + (dir / "m").string(),
      dir);
  ASSERT_EQ(measured.status, 0) << measured.err;
  for (const char* f : {"neural.npy", "measurement.npy", "history.png", "metrics.json"})
    EXPECT_TRUE(fs::exists(dir / "m" / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "m" / "ground_truth.npy"));
  EXPECT_FALSE(fs::exists(dir / "m" / "panel.png"));
  EXPECT_TRUE(same_bits(fk::read_npy((dir / "m" / "neural.npy").string()),
                        fk::read_npy((dir / "s" / "neural.npy").string())));
  std::stringstream metrics;
  metrics << std::ifstream(dir / "m" / "metrics.json").rdbuf();
  EXPECT_NE(metrics.str().find("\"data_fit\""), std::string::npos);
  EXPECT_EQ(metrics.str().find("\"psnr\""), std::string::npos);
}

}  // namespace
