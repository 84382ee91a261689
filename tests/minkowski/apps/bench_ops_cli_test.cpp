// The `minkowski bench ops` CLI: a tiny scene writes the JSON the bench
// promises (row and pair counts known in closed form, every op timed at the
// thread counts asked, a triad per thread count), and bad options print one
// line and exit non-zero. Skipped when the CLI has not been built.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cli_run.h"
#include "minkowski/apps/npy_write.h"
#include "scratch_dir.h"

namespace {

namespace fs = std::filesystem;

fs::path scratch() {
  return fieldkit_test::scratch_dir();
}

// A 12 x 12 plane of voxels at z = 5, batch 0.
fs::path plane_scene() {
  std::vector<int32_t> rows;
  for (int x = 0; x < 12; ++x)
    for (int y = 0; y < 12; ++y) rows.insert(rows.end(), {0, x, y, 5});
  const fs::path p = scratch() / "plane.npy";
  fieldkit_test::write_npy_i32(p, rows, 4);
  return p;
}

TEST(BenchOpsCli, TinySceneWritesItsJson) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const fs::path json = scratch() / "ops.json";
  const auto r = fieldkit_test::run_cli(
      bin,
      "bench ops --scene " + plane_scene().string() +
          " --channels 8 --threads 1,2 --repeats 1 --triad-mib 1 --evict-mib 1 --json " +
          json.string(),
      scratch());
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["unique_rows"], 144);
  EXPECT_EQ(j["stride2_rows"], 36);  // 6 x 6 windows of 2 x 2 at z = 4
  EXPECT_EQ(j["pairs_k2"], 144);     // every voxel in exactly one window
  // kernel 3 around even x: {x-1, x, x+1} within 0..11, i.e. 2 + 5 * 3 = 17
  // per axis, and only z = 5 of {3, 4, 5}
  EXPECT_EQ(j["pairs_k3"], 17 * 17);
  EXPECT_EQ(j["batch_items"], 1);
  EXPECT_EQ(j["channels"], 8);
  EXPECT_EQ(j["threads"], nlohmann::json({1, 2}));
  for (const char* t : {"1", "2"}) EXPECT_GT(j["triad_bytes_per_s"][t].get<double>(), 0.0) << t;
  std::set<std::string> ops;
  for (const auto& op : j["ops"]) {
    ops.insert(op["op"].get<std::string>() + " " + op["pass"].get<std::string>());
    EXPECT_GT(op["bytes"].get<double>(), 0.0) << op["op"];
    ASSERT_EQ(op["runs"].size(), 2u) << op["op"];
    for (const auto& run : op["runs"]) {
      EXPECT_GT(run["ms"].get<double>(), 0.0) << op["op"];
      EXPECT_GT(run["triad_fraction"].get<double>(), 0.0) << op["op"];
    }
  }
  for (const char* name :
       {"sum_pool k2 s2", "avg_pool k2 s2", "max_pool k3 s2", "sum_unpool k2 s2", "global_avg",
        "global_max", "broadcast_add", "broadcast_mul", "broadcast_cat", "batch_norm train",
        "instance_norm", "relu", "prune 1/2", "union +half", "interpolate", "spmm k3 s2"})
    for (const char* pass : {"forward", "backward"})
      EXPECT_TRUE(ops.count(std::string(name) + " " + pass)) << name << " " << pass;
}

TEST(BenchOpsCli, BadOptionsPrintOneLineAndFail) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const std::string scene = plane_scene().string();
  const std::pair<std::string, std::string> cases[] = {
      {"bench ops --scene " + (scratch() / "missing.npy").string(), "missing.npy"},
      {"bench ops --scene " + scene + " --channels 0", "--channels"},
      {"bench ops --scene " + scene + " --threads 0", "--threads"},
      {"bench ops --scene " + scene + " --threads 1,x", "--threads"},
      {"bench ops --scene " + scene + " --repeats 0", "--repeats"},
      {"bench ops --scene " + scene + " --dtype i32", "--dtype"},
      {"bench ops --scene " + scene + " --bogus", "--bogus"}};
  for (const auto& [args, needle] : cases) {
    const auto r = fieldkit_test::run_cli(bin, args, scratch());
    EXPECT_NE(r.status, 0) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("minkowski: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": " << r.err;
  }
}

}  // namespace
