// Checkpoints: a round trip is bit-exact (parameters and buffers, every
// dtype); truncated, foreign and wrong-version files and checkpoints of
// another architecture are fk::Errors naming the problem.
#include "minkowski/nn/checkpoint.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <sys/wait.h>

#include "fk/fk.h"
#include "fk/io/replace_file.h"
#include "fk/test_util.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/resnet.h"

namespace minkowski::nn {
namespace {

using fk::test::error_of;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mknn_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

MinkUNetOptions tiny_unet(int64_t out = 3) {
  MinkUNetOptions o;
  o.in_channels = 2;
  o.out_channels = out;
  o.dimension = 2;
  o.layers = {1, 1, 1, 1, 1, 1, 1, 1};
  o.planes = {4, 4, 8, 8, 8, 4, 4, 4};
  o.init_dim = 4;
  return o;
}

std::vector<std::vector<uint8_t>> state_bytes(const Module& m) {
  std::vector<std::vector<uint8_t>> out;
  for (auto& [n, t] : m.state()) {
    const fk::Tensor c = t.detach().contiguous();
    const auto* p = static_cast<const uint8_t*>(c.data_ptr());
    out.emplace_back(p, p + c.nbytes());
  }
  return out;
}

TEST(NnCheckpoint, RoundTripIsBitExact) {
  fk::manual_seed(1);
  MinkUNet a(tiny_unet());
  fk::manual_seed(2);
  MinkUNet b(tiny_unet());
  ASSERT_NE(state_bytes(a), state_bytes(b));
  const std::string path = temp_path("roundtrip.ckpt");
  save_state(a, path);
  load_state(b, path);
  EXPECT_EQ(state_bytes(a), state_bytes(b));
  // A "meta." tensor (minkowski train's voxel size) is not state: skipped.
  NamedTensors with_meta = a.state();
  with_meta.emplace_back("meta.voxel", fk::full({}, 0.1, {fk::DType::F64}));
  save_tensors(path, with_meta);
  fk::manual_seed(3);
  MinkUNet c(tiny_unet());
  load_state(c, path);
  EXPECT_EQ(state_bytes(a), state_bytes(c));
  std::remove(path.c_str());
}

// A diverged run's NaN weights are refused by name, not loaded into a model
// that would label every point alike.
TEST(NnCheckpoint, NonFiniteWeightsAreRefusedByName) {
  MinkUNet a(tiny_unet());
  NamedTensors state = a.state();
  const std::string path = temp_path("nan.ckpt");
  NamedTensors saved;
  for (const auto& [name, t] : state) saved.push_back({name, t.detach().clone()});
  const auto it = std::find_if(saved.begin(), saved.end(),
                               [](const auto& e) { return fk::is_floating(e.second.dtype()); });
  ASSERT_NE(it, saved.end());
  fk::fill_(it->second, std::nan(""));
  save_tensors(path, saved);
  const std::string e = error_of([&] { load_state(a, path); });
  EXPECT_NE(e.find("expected finite weights, got nan in " + it->first), std::string::npos) << e;
  std::remove(path.c_str());
}

TEST(NnCheckpoint, EveryDtypeAndRankRoundTrips) {
  NamedTensors in{{"f64", fk::test::random_tensor({2, 3}, fk::DType::F64)},
                  {"bf16", fk::test::random_tensor({5}, fk::DType::BF16)},
                  {"i64", fk::arange(6).reshape({1, 2, 3})},
                  {"scalar", fk::scalar_tensor(4.5)},
                  {"empty", fk::zeros({0, 3})}};
  const std::string path = temp_path("dtypes.ckpt");
  save_tensors(path, in);
  const NamedTensors out = read_tensors(path);
  ASSERT_EQ(out.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out[i].first, in[i].first);
    EXPECT_EQ(out[i].second.dtype(), in[i].second.dtype());
    EXPECT_EQ(out[i].second.shape(), in[i].second.shape());
    EXPECT_EQ(out[i].second.to_vector<double>(), in[i].second.to_vector<double>());
  }
  std::remove(path.c_str());
}

TEST(NnCheckpoint, TruncatedFileNamesWhereItEnds) {
  MinkUNet a(tiny_unet());
  const std::string path = temp_path("truncated.ckpt");
  save_state(a, path);
  const auto size = std::filesystem::file_size(path);
  for (auto keep : {size_t{4}, size_t{14}, size_t{40}, static_cast<size_t>(size - 1)}) {
    std::filesystem::resize_file(path, keep);
    const std::string e = error_of([&] { load_state(a, path); });
    EXPECT_NE(e.find("truncated"), std::string::npos) << keep << ": " << e;
  }
  std::remove(path.c_str());
}

// A checkpoint is written to a temporary and renamed: a rename that fails
// (the path a non-empty directory) is an error naming the checkpoint (a
// cleared error code once returned as if saved), no temporary is left, and a
// temporary of a process that no longer runs is removed by the next save.
TEST(NnCheckpoint, AFailedSaveSaysSoAndLeavesNoTemporary) {
  namespace fs = std::filesystem;
  MinkUNet a(tiny_unet());
  const fs::path dir = temp_path("save_dir");
  fs::remove_all(dir);
  fs::create_directories(dir / "last.ckpt" / "x");
  const std::string e = error_of([&] { save_state(a, (dir / "last.ckpt").string()); });
  EXPECT_NE(e.find("save checkpoint: expected a successful write, got '" +
                   (dir / "last.ckpt").string() + "'"),
            std::string::npos)
      << e;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  // A temporary of a finished process (a child that exited) goes at the next save.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  const fs::path ok = dir / "ok.ckpt";
  const fs::path stale =
      dir / ("ok.ckpt.tmp." + fk::host_tag() + "." + std::to_string(child) + ".0");
  std::ofstream(stale) << "half";
  const fs::path mine = fk::temporary_path(ok.string());
  std::ofstream(mine) << "in flight";
  save_state(a, ok.string());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(mine));  // this process's own: not stale
  fs::remove_all(dir);
}

TEST(NnCheckpoint, ForeignWrongVersionAndTrailingBytesAreErrors) {
  MinkUNet a(tiny_unet());
  const std::string path = temp_path("foreign.ckpt");
  std::ofstream(path) << "ply\nformat ascii 1.0\nelement vertex 3\n";
  EXPECT_NE(error_of([&] { load_state(a, path); }).find("FKMKNN01"), std::string::npos);
  save_state(a, path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8);
    const uint32_t v = 7;
    f.write(reinterpret_cast<const char*>(&v), 4);
  }
  EXPECT_NE(error_of([&] { load_state(a, path); }).find("format version 1"), std::string::npos);
  save_state(a, path);
  std::ofstream(path, std::ios::app | std::ios::binary) << "x";
  EXPECT_NE(error_of([&] { load_state(a, path); }).find("trailing"), std::string::npos);
  EXPECT_NE(error_of([&] { load_state(a, temp_path("missing.ckpt")); }).find("readable"),
            std::string::npos);
  // A directory is named (its stream's own error named no path).
  const std::string dir = temp_path("a_directory.ckpt");
  std::filesystem::create_directories(dir);
  EXPECT_NE(error_of([&] { load_state(a, dir); }).find("a_directory.ckpt', a directory"),
            std::string::npos);
  std::filesystem::remove(dir);
  std::remove(path.c_str());
}

TEST(NnCheckpoint, AnotherArchitectureNamesTheMismatchingTensor) {
  MinkUNet a(tiny_unet(3));
  MinkUNet wider_head(tiny_unet(5));
  const std::string path = temp_path("arch.ckpt");
  save_state(a, path);
  const std::string e = error_of([&] { load_state(wider_head, path); });
  EXPECT_NE(e.find("head.weight"), std::string::npos) << e;
  ResNetOptions r = resnet_options("14", 2, 3, 2);
  ResNet resnet(r);
  const std::string e2 = error_of([&] { load_state(resnet, path); });
  EXPECT_NE(e2.find("body.0.weight"), std::string::npos) << e2;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace minkowski::nn
