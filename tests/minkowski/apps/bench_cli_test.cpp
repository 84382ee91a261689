// The `minkowski bench conv` CLI: a small synthetic run writes the JSON its
// docs promise, and bad input prints one line and exits non-zero. Runs the
// built binary next to this test binary (both go to FK_BIN_DIR); skipped when
// it has not been built.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("minkowski_cli_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

// A .npy of int32 rows (N x cols), version 1.0, little endian.
void write_npy(const fs::path& path, const std::vector<int32_t>& v, int64_t cols) {
  std::string header = "{'descr': '<i4', 'fortran_order': False, 'shape': (" +
                       std::to_string(v.size() / cols) + ", " + std::to_string(cols) + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
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
  EXPECT_GT(j["fma_peak_gflops"].get<double>(), 0.0);
}

TEST(BenchConvCli, BadInputPrintsOneLineAndFails) {
  if (!fs::exists(fieldkit_test::sibling_binary("minkowski")))
    GTEST_SKIP() << "minkowski CLI not built";
  const fs::path three_cols = scratch() / "three_cols.npy";
  write_npy(three_cols, {0, 1, 2, 0, 1, 3}, 3);
  const std::pair<std::string, std::string> cases[] = {
      {"bench conv --scene " + (scratch() / "missing.npy").string(), "missing.npy"},
      {"bench conv --scene " + three_cols.string(), "N x 4"},
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
}

}  // namespace
