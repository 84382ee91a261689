// The `minkowski bench conv` CLI: a small synthetic run writes the JSON its
// docs promise, and bad input prints one line and exits non-zero; `bench
// train` prints its rows. Runs the
// built binary next to this test binary (both go to FK_BIN_DIR); skipped when
// it has not been built.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "fk/cpu_isa.h"
#include "fk/device.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "scratch_dir.h"

namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  return fieldkit_test::scratch_dir();
}

// A .npy of int32 rows (N x cols).
void write_npy(const fs::path& path, const std::vector<int32_t>& v, int64_t cols) {
  fk::write_npy(path.string(),
                fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size()) / cols, cols}));
}

// `minkowski args` with its stdout kept (run_cli keeps stderr).
std::string run_stdout(const std::string& args, int& status) {
  const fs::path out = scratch() / "stdout.txt";
  const std::string cmd =
      fieldkit_test::sibling_binary("minkowski").string() + " " + args + " >" + out.string();
  const int rc = std::system(cmd.c_str());
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  std::ifstream f(out);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

TEST(BenchConvCli, SceneRunWritesItsJson) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  // A 12 x 12 plane of voxels: each interior voxel has 9 neighbours (itself
  // and 8 in the plane) under a 3^3 kernel, so the pair count is known.
  std::vector<int32_t> rows;
  for (int x = 0; x < 12; ++x)
    for (int y = 0; y < 12; ++y) rows.insert(rows.end(), {0, x, y, 5});
  const fs::path scene = scratch() / "plane.npy", json = scratch() / "out.json";
  write_npy(scene, rows, 4);
  const auto r = fieldkit_test::run_cli(
      fieldkit_test::sibling_binary("minkowski"),
      "bench conv --scene " + scene.string() +
          " --channels 8 --out-channels 16 --kernel 3 --threads 1 --repeats 1 "
          "--json " +
          json.string(),
      scratch());
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["unique_rows"], 144);
  EXPECT_EQ(j["output_rows"], 144);
  // per voxel: (neighbours in x) x (neighbours in y), 3 inside, 2 on an edge
  EXPECT_EQ(j["pairs"], (10 * 3 + 2 * 2) * (10 * 3 + 2 * 2));
  EXPECT_EQ(j["c_in"], 8);
  EXPECT_EQ(j["c_out"], 16);
  EXPECT_EQ(j["sgemm_shape"], nlohmann::json({100000, 8, 16}));
  for (const char* pass : {"fused", "chunked", "per_offset"})
    for (const char* key : {"forward_ms", "backward_ms", "forward_gflops"})
      EXPECT_GT(j[pass][key].get<double>(), 0.0) << pass << " " << key;
  // 0 where FK_CPU_ISA has no FMA to measure (fk/fma_peak.h).
  if (fk::cpu_isa() >= fk::CpuIsa::Avx2) {
    EXPECT_GT(j["fma_peak_gflops"].get<double>(), 0.0);
  }
}

TEST(BenchConvCli, BadInputPrintsOneLineAndFails) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  const fs::path three_cols = scratch() / "three_cols.npy";
  write_npy(three_cols, {0, 1, 2, 0, 1, 3}, 3);
  const fs::path floats = scratch() / "floats.npy", wide = scratch() / "wide.npy";
  fk::write_npy(floats.string(), fk::zeros({2, 4}));
  const fs::path far = scratch() / "far.npy";
  write_npy(far, {0, 0, 0, 0, 0, -2147483647 - 1, 0, 0}, 4);
  fk::write_npy(wide.string(),
                fk::from_vector(std::vector<int64_t>{0, 1, 2, int64_t{1} << 31}, fk::Dims{1, 4}));
  const std::pair<std::string, std::string> cases[] = {
      {"bench conv --scene " + (scratch() / "missing.npy").string(), "missing.npy"},
      {"bench conv --scene " + three_cols.string(), "N x 4"},
      {"bench conv --scene " + floats.string(), "int32 or int64"},
      {"bench conv --scene " + wide.string(), "within the int32 range"},
      {"bench conv --scene " + far.string(), "within [-2^30, 2^30]"},
      {"bench conv --points 1000 --dtype i32", "--dtype"},
      {"bench conv --points 1000 --kernel 0", "--kernel"},
      {"bench conv --points 0", "--points"},
      {"bench conv --points many", "--points"}};
  for (const auto& [args, needle] : cases) {
    const auto r =
        fieldkit_test::run_cli(fieldkit_test::sibling_binary("minkowski"), args, scratch());
    EXPECT_NE(r.status, 0) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("minkowski: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
  }
  // The --json path checked before the work leaves no empty file when the work fails.
  const fs::path json = scratch() / "never_written.json";
  fs::remove(json);
  const auto r = fieldkit_test::run_cli(
      fieldkit_test::sibling_binary("minkowski"),
      "bench conv --json " + json.string() + " --scene " + floats.string(), scratch());
  EXPECT_NE(r.status, 0);
  EXPECT_FALSE(fs::exists(json));
}

// Small synthetic scenes used to never end: the one room had fewer distinct
// surface voxels than asked for. Every size now ends with exactly that many.
TEST(BenchConvCli, EverySyntheticSizeIsReached) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  const fs::path json = scratch() / "small.json";
  for (int points : {1, 1000, 2000, 3000}) {
    int status = -1;
    const std::string out =
        run_stdout("bench conv --points " + std::to_string(points) +
                       " --channels 2 --threads 1 --repeats 1 --json " + json.string(),
                   status);
    ASSERT_EQ(status, 0) << points;
    EXPECT_NE(out.find("scene: " + std::to_string(points) + " voxels in "), std::string::npos)
        << out;
    std::ifstream f(json);
    const nlohmann::json j = nlohmann::json::parse(f);
    EXPECT_EQ(j["unique_rows"], points);
  }
}

TEST(BenchConvCli, EmptyScenesAndNegativeBatchesAreRefusedAsBenchOpsRefusesThem) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  const fs::path empty = scratch() / "empty.npy", negative = scratch() / "negative_batch.npy";
  write_npy(empty, {}, 4);
  write_npy(negative, {0, 1, 2, 3, -1, 0, 0, 0}, 4);
  for (const char* cmd : {"bench conv", "bench ops"}) {
    auto r = fieldkit_test::run_cli(fieldkit_test::sibling_binary("minkowski"),
                                    std::string(cmd) + " --scene " + empty.string(), scratch());
    EXPECT_NE(r.status, 0) << cmd;
    EXPECT_NE(r.err.find("N >= 1, got shape [0, 4]"), std::string::npos) << r.err;
    r = fieldkit_test::run_cli(fieldkit_test::sibling_binary("minkowski"),
                               std::string(cmd) + " --scene " + negative.string(), scratch());
    EXPECT_NE(r.status, 0) << cmd;
    EXPECT_NE(r.err.find("batch indices >= 0, got -1 in row 1"), std::string::npos) << r.err;
  }
}

// `bench train`: one row per precision x copy path with a convolution share
// in (0, 100] %, the traced step's launches and syncs (none on the CPU) and,
// with --ops, its largest host-time events; an unknown precision and a device
// this machine lacks refused in one line.
TEST(BenchTrainCli, RowsPerPrecisionAndCopyPath) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  int status = -1;
  const std::string out = run_stdout(
      "bench train --variant 14 --points 1500 --steps 1 --threads 1 --precision bf16 --ops 4",
      status);
  ASSERT_EQ(status, 0) << out;
  int rows = 0, event_lists = 0, events = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("top 4 host-time events") != std::string::npos) {
      ++event_lists;
      continue;
    }
    if (line.rfind("    ", 0) == 0) {  // an event line
      std::istringstream ev(line);
      std::string name;
      double self = -1, total = -1;
      int64_t calls = 0;
      if (ev >> name >> self >> calls >> total) {
        ++events;
        EXPECT_GE(self, 0.0) << line;
        EXPECT_GE(total, self - 1e-9) << line;
        EXPECT_GT(calls, 0) << line;
        continue;
      }
    }
    std::istringstream row(line);
    std::string threads, precision, copy;
    double ms = 0, fwd = 0, bwd = 0, opt = 0, pps = 0, conv = 0, peak = 0;
    int64_t launches = -1, syncs = -1;
    if (!(row >> threads >> precision >> copy >> ms >> fwd >> bwd >> opt >> pps >> conv >> peak >>
          launches >> syncs))
      continue;
    ++rows;
    EXPECT_EQ(precision, "bf16");
    EXPECT_TRUE(copy == "fused" || copy == "per-offset") << copy;
    EXPECT_GT(conv, 0.0);
    EXPECT_LE(conv, 100.0);
    EXPECT_GT(peak, 0.0);
    EXPECT_GE(launches, 0);
    EXPECT_EQ(syncs, 0) << "the CPU has no device to wait for";
  }
  EXPECT_EQ(rows, 2) << out;
  EXPECT_EQ(event_lists, 2) << out;
  EXPECT_EQ(events, 8) << out;
  EXPECT_NE(out.find("minkowski.convolution"), std::string::npos) << out;
  run_stdout("bench train --points 1500 --steps 1 --precision f8", status);
  EXPECT_EQ(status, 1);
  if (fk::cuda_device_count() == 0) {
    const std::string refused =
        run_stdout("bench train --points 1500 --steps 1 --device cuda:0", status);
    EXPECT_EQ(status, 1) << refused;
  }
}

}  // namespace

namespace {

// --channels with several widths: one ladder entry per width, each pass with
// its path, GFLOP/s consistent with its time, and the A/B and peer times.
TEST(BenchConvCli, ChannelLadderReportsEveryWidth) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  const fs::path json = scratch() / "ladder.json";
  int status = -1;
  const std::string out = run_stdout(
      "bench conv --points 1500 --channels 8,16 --threads 1 --repeats 1 --json " + json.string(),
      status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("x peer"), std::string::npos) << out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  ASSERT_EQ(j["ladder"].size(), 2u);
  const double pairs = j["pairs"];
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& w = j["ladder"][i];
    const double c = i == 0 ? 8 : 16;
    EXPECT_EQ(w["channels"], c);
    for (const char* pass : {"forward", "backward"}) {
      const nlohmann::json& p = w[pass];
      const std::string path = p["path"];
      EXPECT_TRUE(path.rfind("tiles", 0) == 0 || path.rfind("gemm", 0) == 0) << path;
      const double flop = (std::string(pass) == "forward" ? 2.0 : 4.0) * pairs * c * c;
      EXPECT_NEAR(p["gflops"].get<double>(), flop / (p["cpu_ms"].get<double>() * 1e6),
                  1e-6 * p["gflops"].get<double>());
      for (const char* t : {"ms", "peer_ms", "peer_cpu_ms", "tiles_cpu_ms", "gemm_cpu_ms"})
        EXPECT_GT(p[t].get<double>(), 0) << t;
    }
  }
  const auto r = fieldkit_test::run_cli(fieldkit_test::sibling_binary("minkowski"),
                                        "bench conv --points 100 --channels 8,0", scratch());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--channels: Value 0 not in range 1 to 4096"), std::string::npos) << r.err;
}

}  // namespace
