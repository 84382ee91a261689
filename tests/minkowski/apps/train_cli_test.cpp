// `minkowski train` / `predict`: a one-step run writes its log and
// checkpoints and learning curves, --resume continues the log (also in fp16),
// a damaged log is an error, a ResNet classifier trains on shapes, predict
// loads either checkpoint (in f32, bf16 or fp16), a
// folder of point files trains, and bad input (another architecture's
// checkpoint, an unknown optimizer, labels outside the classes) prints
// one line and exits non-zero. Skipped when the CLI has not been built.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli_run.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "minkowski/nn/checkpoint.h"
#include "scratch_dir.h"

namespace {

namespace fs = std::filesystem;

// A PNG file (signature) whose IHDR gives width x height.
void expect_png(const fs::path& p, uint32_t width, uint32_t height) {
  std::ifstream f(p, std::ios::binary);
  ASSERT_TRUE(f.good()) << p;
  unsigned char h[24] = {};
  f.read(reinterpret_cast<char*>(h), 24);
  const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  EXPECT_TRUE(std::equal(signature, signature + 8, h)) << p;
  auto be32 = [&](int at) {
    return uint32_t{h[at]} << 24 | uint32_t{h[at + 1]} << 16 | uint32_t{h[at + 2]} << 8 | h[at + 3];
  };
  EXPECT_EQ(be32(16), width);
  EXPECT_EQ(be32(20), height);
}

int count_lines(const fs::path& p) {
  std::ifstream f(p);
  return static_cast<int>(std::count(std::istreambuf_iterator<char>(f), {}, '\n'));
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(TrainCli, TrainResumePredictAndErrors) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const fs::path dir =
      fs::temp_directory_path() / ("minkowski_train_cli_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string common =
      "--variant 14A --steps-per-epoch 1 --batch 1 --val-scenes 1 --voxel 0.4 --threads 1 --out " +
      (dir / "run").string();
  auto r = fieldkit_test::run_cli(bin, "train --epochs 1 " + common, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "run" / "best.ckpt"));
  EXPECT_EQ(count_lines(dir / "run" / "log.csv"), 2);
  // A resume under another option that shapes the training is refused by
  // name (--lr 0.5 went on as a hybrid of two runs without a word).
  for (const auto& [arg, message] : std::vector<std::pair<std::string, std::string>>{
           {"--lr 0.5", "expected --lr 0.01 (the run being resumed), got --lr 0.5"},
           {"--precision bf16",
            "expected --precision f32 (the run being resumed), got "
            "--precision bf16"},
           {"--weight-decay 0.1",
            "expected --weight-decay 0 (the run being resumed), got --weight-decay 0.1"}}) {
    r = fieldkit_test::run_cli(bin, "train --epochs 2 --resume " + common + " " + arg, dir);
    EXPECT_EQ(r.status, 1) << arg;
    EXPECT_NE(r.err.find(message), std::string::npos) << arg << ": " << r.err;
  }
  EXPECT_EQ(count_lines(dir / "run" / "log.csv"), 2);
  r = fieldkit_test::run_cli(bin, "train --epochs 2 --resume " + common, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "run" / "log.csv"), 3);
  expect_png(dir / "run" / "curves.png", 1016, 374);
  const std::string ckpt = (dir / "run" / "best.ckpt").string();
  r = fieldkit_test::run_cli(bin,
                             "predict --variant 14A --voxel 0.4 --checkpoint " + ckpt + " --ply " +
                                 (dir / "p.ply").string() + " --labels " + (dir / "p.npy").string(),
                             dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "p.ply"));
  EXPECT_TRUE(fs::exists(dir / "p.npy"));
  r = fieldkit_test::run_cli(bin, "predict --variant 18 --checkpoint " + ckpt, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("down1_blocks.1.conv1.weight"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Under bf16 / fp16 autocast every point still gets a class; an unknown
  // precision or model, or the wrong architecture, is one line.
  const std::vector<int64_t> f32_labels =
      fk::read_npy((dir / "p.npy").string()).to_vector<int64_t>();
  for (const char* p : {"bf16", "fp16"}) {
    const std::string labels = (dir / ("p_" + std::string(p) + ".npy")).string();
    r = fieldkit_test::run_cli(bin,
                               "predict --variant 14A --voxel 0.4 --precision " + std::string(p) +
                                   " --checkpoint " + ckpt + " --labels " + labels,
                               dir);
    ASSERT_EQ(r.status, 0) << p << ": " << r.err;
    const std::vector<int64_t> got = fk::read_npy(labels).to_vector<int64_t>();
    EXPECT_EQ(got.size(), f32_labels.size()) << p;
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](int64_t l) { return l >= 0 && l < 5; }));
  }
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {" --precision f8", "--precision: expected f32, bf16 or fp16, got 'f8'"},
           {" --model vgg",
            "--model: expected minkunet, resnet14, resnet18, resnet34, resnet50 or resnet101, got "
            "'vgg'"},
           {" --model resnet14", "body.0.weight"},
           {" --device cuda:63", "minkowski predict --device: expected"}}) {
    r = fieldkit_test::run_cli(bin, "predict --checkpoint " + ckpt + args, dir);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  r = fieldkit_test::run_cli(bin, "train --optimizer rmsprop " + common, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("adam, adamw or sgd"), std::string::npos) << r.err;
  r = fieldkit_test::run_cli(bin, "train --device cuda --coords gpu " + common, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--coords: expected device or host, got 'gpu'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Values CLI11's range checks pass but training cannot use: one line each,
  // before the output folder is touched.
  for (const auto& [arg, message] : std::vector<std::pair<std::string, std::string>>{
           {"--voxel inf", "--voxel: expected a positive finite size, got inf"},
           {"--lr nan", "--lr: expected a finite rate > 0, got nan"},
           {"--schedule step --lr-gamma 2",
            "--lr-gamma: expected a decay factor in (0, 1], got 2"}}) {
    r = fieldkit_test::run_cli(bin,
                               "train --variant 14A --steps-per-epoch 1 --batch 1 --threads 1 " +
                                   arg + " --out " + (dir / "unusable").string(),
                               dir);
    EXPECT_EQ(r.status, 1) << arg;
    EXPECT_NE(r.err.find(message), std::string::npos) << arg << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(dir / "unusable" / "log.csv")) << arg;
  }
  // --device: an absent CUDA device (no machine has 64) and a bad name, each one line.
  for (const auto& [device, message] :
       {std::pair<std::string, std::string>{"cuda:63", "minkowski train --device: expected"},
        {"gpu", "minkowski train --device: expected"}}) {
    r = fieldkit_test::run_cli(bin, "train --device " + device + " " + common, dir);
    EXPECT_EQ(r.status, 1) << device;
    EXPECT_NE(r.err.find(message), std::string::npos) << device << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // A folder of labelled point files: two rooms of 40 points, labels by height.
  fs::create_directories(dir / "points");
  for (const char* name : {"a.xyz", "b.xyz"}) {
    std::ofstream f(dir / "points" / name);
    for (int i = 0; i < 40; ++i) f << i % 7 << ' ' << i / 7 << ' ' << i % 3 << ' ' << i % 3 << '\n';
  }
  const std::string folder =
      "train --epochs 1 --steps-per-epoch 1 --batch 1 --voxel 1 --threads 1 --variant 14A --data " +
      (dir / "points").string() + " --out " + (dir / "run2").string();
  r = fieldkit_test::run_cli(bin, folder + " --classes 3", dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "run2" / "log.csv"), 2);
  // predict reads the class count from the checkpoint (3 here, not the
  // scenes' 5) and takes train's resumable last.ckpt as well as best.ckpt.
  for (const char* c : {"best.ckpt", "last.ckpt"}) {
    const std::string labels = (dir / "p3.npy").string();
    r = fieldkit_test::run_cli(bin,
                               "predict --voxel 1 --checkpoint " + (dir / "run2" / c).string() +
                                   " --input " + (dir / "points" / "a.xyz").string() +
                                   " --labels " + labels,
                               dir);
    ASSERT_EQ(r.status, 0) << c << ": " << r.err;
    const std::vector<int64_t> got = fk::read_npy(labels).to_vector<int64_t>();
    EXPECT_EQ(got.size(), 40u);
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](int64_t l) { return l >= 0 && l < 3; }));
    // Without --voxel, predict takes the size the net was trained at (1 m,
    // not the scenes' 0.1): the same labels; another size is named.
    const std::string own = (dir / "p3_own.npy").string();
    r = fieldkit_test::run_cli(bin,
                               "predict --checkpoint " + (dir / "run2" / c).string() + " --input " +
                                   (dir / "points" / "a.xyz").string() + " --labels " + own,
                               dir);
    ASSERT_EQ(r.status, 0) << c << ": " << r.err;
    EXPECT_EQ(fk::read_npy(own).to_vector<int64_t>(), got);
    EXPECT_EQ(r.err.find("trained at"), std::string::npos) << r.err;
    r = fieldkit_test::run_cli(bin,
                               "predict --voxel 0.5 --checkpoint " + (dir / "run2" / c).string() +
                                   " --input " + (dir / "points" / "a.xyz").string(),
                               dir);
    ASSERT_EQ(r.status, 0) << c << ": " << r.err;
    EXPECT_NE(r.err.find("--voxel 0.5, the net was trained at 1"), std::string::npos) << r.err;
  }
  // A resume under another voxel size, optimizer (its state once read as
  // another architecture's) or seed (its data and dropout stream went on as
  // a hybrid of two runs) is refused, naming the run's.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"--voxel 0.5", "expected --voxel 1 (the run being resumed), got --voxel 0.5"},
           {"--voxel 1 --variant 14A --optimizer sgd",
            "expected --optimizer adam (the run being resumed), got --optimizer sgd"},
           {"--voxel 1 --variant 14A --seed 7",
            "expected --seed 0 (the run being resumed), got --seed 7"}}) {
    r = fieldkit_test::run_cli(bin,
                               "train --epochs 2 --steps-per-epoch 1 --batch 1 " + args +
                                   " --threads 1 --resume --classes 3 --data " +
                                   (dir / "points").string() + " --out " + (dir / "run2").string(),
                               dir);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  // A resume of a run that is not there says so and makes no folder for it.
  r = fieldkit_test::run_cli(bin, "train --resume --out " + (dir / "no_run").string(), dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--resume: expected a run folder with last.ckpt"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "no_run"));
  // A failed call leaves the run's log as it was; a resume without a log
  // starts one with its header.
  const std::string log_before = read_text(dir / "run2" / "log.csv");
  r = fieldkit_test::run_cli(
      bin,
      "train --classes 3 --data " + (dir / "absent").string() + " --out " + (dir / "run2").string(),
      dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--data: expected a folder of labelled point files"), std::string::npos)
      << r.err;
  EXPECT_EQ(read_text(dir / "run2" / "log.csv"), log_before);
  // So does a training file with a bad label, met in the first step (a new
  // run's log is written with its first epoch's row); the error names the
  // file and the point, as predict's does.
  fs::create_directories(dir / "bad_points");
  for (const char* name : {"a.xyz", "b.xyz", "c.xyz"}) {
    std::ofstream f(dir / "bad_points" / name);
    for (int i = 0; i < 40; ++i)
      f << i % 7 << ' ' << i / 7 << ' ' << i % 3 << ' ' << (name[0] == 'a' && i == 6 ? 3 : i % 3)
        << '\n';
  }
  r = fieldkit_test::run_cli(bin,
                             "train --epochs 1 --steps-per-epoch 1 --batch 1 --voxel 1 --threads 1 "
                             "--classes 3 --data " +
                                 (dir / "bad_points").string() + " --out " +
                                 (dir / "run2").string(),
                             dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("a.xyz: expected labels in [0, 3) or -100 (--classes 3), got label 3 at "
                       "point 6"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(read_text(dir / "run2" / "log.csv"), log_before);
  r = fieldkit_test::run_cli(bin,
                             "predict --checkpoint " + (dir / "run2" / "best.ckpt").string() +
                                 " --input " + (dir / "bad_points" / "a.xyz").string(),
                             dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--input " + (dir / "bad_points" / "a.xyz").string() +
                       ": expected labels in [0, 3) or -100 (the checkpoint's 3 classes), got "
                       "label 3 at point 6"),
            std::string::npos)
      << r.err;
  fs::remove(dir / "run2" / "log.csv");
  r = fieldkit_test::run_cli(bin,
                             "train --epochs 2 --steps-per-epoch 1 --batch 1 --voxel 1 --threads 1 "
                             "--resume --classes 3 --data " +
                                 (dir / "points").string() + " --out " + (dir / "run2").string(),
                             dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_text(dir / "run2" / "log.csv").rfind("epoch,loss,", 0), 0u);
  // Counts and sizes out of range are refused before any work.
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"train --val-scenes -1", "--val-scenes: Value -1 not in range"},
           {"train --epochs 0", "--epochs: Value 0 not in range"},
           {"train --steps-per-epoch 0", "--steps-per-epoch: Value 0 not in range"},
           {"train --batch 0", "--batch: Value 0 not in range"},
           {"train --threads 100000",
            "--threads: expected a thread count in [0, 4096], got '100000'"},
           {"train --threads abc", "--threads: expected a thread count in [0, 4096], got 'abc'"},
           {"train --seed -1", "--seed: expected a seed in [0, 2^64), got '-1'"},
           {"train --clip -1", "--clip: expected a finite value >= 0, got '-1'"},
           {"train --warmup -1", "--warmup: expected a finite value >= 0, got '-1'"},
           {"train --weight-decay nan", "--weight-decay: expected a finite value >= 0, got 'nan'"},
           // Options the run would ignore without a word.
           {"train --data . --val-scenes 7",
            "minkowski train --val-scenes: expected no "
            "--val-scenes with --data"},
           {"train --coords host", "minkowski train --coords: expected a CUDA --device beside it"},
           {"train --lr-gamma 0.5",
            "minkowski train --lr-gamma: expected --schedule step beside "
            "it, got --schedule cosine"},
           {"train --lr-step 3", "minkowski train --lr-step: expected --schedule step"},
           {"predict --checkpoint x --input y.ply --scene-seed 3",
            "minkowski predict --scene-seed: expected no --scene-seed with --input"},
           {"train --device gpu", "minkowski train --device: expected"},
           {"predict --checkpoint x --device gpu", "minkowski predict --device: expected"},
           {"train --epochs 1 --steps-per-epoch 2 --warmup 5",
            "--warmup: expected fewer warm-up steps than the run's 2 steps, got 5"},
           {"train --planes 8,16,32,64", "--planes: expected no --planes with minkunet"},
           {"train --model resnet14 --variant 18",
            "--variant: expected no --variant with a ResNet"},
           // the default's name given is given (it was dropped without a word)
           {"train --model resnet14 --variant 14A",
            "--variant: expected no --variant with a ResNet"},
           // named by the option, not the library function
           {"train --variant 152", "minkowski train --variant: expected 14, 14A-D"},
           {"predict --checkpoint x --variant 152", "minkowski predict --variant: expected 14"},
           {"predict --checkpoint x --model resnet14 --variant 14A",
            "minkowski predict --variant: expected no --variant with a ResNet"},
           {"train --optimizer foo", "--optimizer"},
           {"train --schedule foo", "minkowski train --schedule: expected"},
           {"bench train --variant 152", "minkowski bench train --variant: expected 14"},
           {"predict --checkpoint x --threads 100000", "--threads: expected a thread count"},
           {"predict --checkpoint x --scene-seed -5", "--scene-seed: expected a seed"},
           {"bench train --threads 0", "--threads: expected a thread count in [1, 4096], got '0'"},
           {"bench train --trace /proc/x.json", "--trace: expected a path in a writable folder"},
           {"bench train --trace " + dir.string() + "/",
            "--trace: expected a file path (FILE.json), not a folder"},
           {"bench train --points 50",
            "minkowski bench train --points: expected a scene with two voxels or more"},
           {"bench train --threads abc",
            "--threads: expected a thread count in [1, 4096], got 'abc'"},
           {"bench conv --kernel 200", "--kernel: Value 200 not in range 1 to 15"},
           {"bench conv --points 100 --json /proc/no/such.json",
            "--json: expected a writable file"},
           {"bench ops --points -5", "--points: Value -5 not in range"},
           {"bench ops --points 100 --scene x.npy", "give --scene or --points, not both"},
           // An output on an input would be emptied before it was read.
           {"predict --voxel 1 --checkpoint " + (dir / "run2" / "best.ckpt").string() +
                " --input " + (dir / "points" / "a.xyz").string() + " --ply " +
                (dir / "points" / "a.xyz").string(),
            "--ply: expected a file other than the inputs"}}) {
    const bool train = args.starts_with("train");
    r = fieldkit_test::run_cli(bin, train ? args + " --out " + (dir / "refused").string() : args,
                               dir);
    EXPECT_NE(r.status, 0) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "refused"));               // no empty run folder either
  EXPECT_GT(fs::file_size(dir / "points" / "a.xyz"), 0u);  // the refused --ply left it whole
  // Label 2 is out of range: the held-out file says so before any training,
  // and a training file when it is read, by name.
  r = fieldkit_test::run_cli(bin, folder + " --classes 2", dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(
      r.err.find("b.xyz: expected labels in [0, 2) or -100 (--classes 2), got label 2 at point 2"),
      std::string::npos)
      << r.err;
  {
    std::ofstream held_out(dir / "points" / "b.xyz");  // held out: labels 0 and 1 only
    for (int i = 0; i < 40; ++i)
      held_out << i % 7 << ' ' << i / 7 << ' ' << i % 3 << ' ' << i % 2 << '\n';
  }
  r = fieldkit_test::run_cli(bin, folder + " --classes 2", dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(
      r.err.find("a.xyz: expected labels in [0, 2) or -100 (--classes 2), got label 2 at point 2"),
      std::string::npos)
      << r.err;
  // A resume from a diverged run's last.ckpt (NaN weights) is refused by name.
  const fs::path last = dir / "run2" / "last.ckpt";
  minkowski::nn::NamedTensors state = minkowski::nn::read_tensors(last.string());
  for (auto& [name, t] : state)
    if (name.rfind("model.", 0) == 0 && fk::is_floating(t.dtype())) {
      fk::fill_(t, std::nan(""));
      break;
    }
  minkowski::nn::save_tensors(last.string(), state);
  r = fieldkit_test::run_cli(bin,
                             "train --epochs 2 --steps-per-epoch 1 --batch 1 --voxel 1 --threads 1 "
                             "--variant 14A --classes 3 --resume --data " +
                                 (dir / "points").string() + " --out " + (dir / "run2").string(),
                             dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("expected finite weights, got nan in model."), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// Every --data file is read before step 0: a bad training file no step had
// met yet passed (or stopped the run epochs in). Held-out files whose every
// point is ignored are refused: no epoch could score, and the run reported a
// best mIoU of -1 with no best.ckpt.
TEST(TrainCli, DataFoldersAreCheckedBeforeTheFirstStep) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const fs::path dir = fieldkit_test::scratch_dir() / "data_folders";
  fs::create_directories(dir / "points");
  const auto write = [&](const char* name, int bad_label, int every_label) {
    std::ofstream f(dir / "points" / name);
    for (int i = 0; i < 40; ++i)
      f << i % 7 << ' ' << i / 7 << ' ' << i % 3 << ' '
        << (i == 6 && bad_label ? bad_label
            : every_label       ? every_label
                                : i % 3)
        << '\n';
  };
  for (const char* name : {"a.xyz", "b.xyz", "d.xyz", "e.xyz"}) write(name, 0, 0);
  write("c.xyz", 3, 0);  // a training file a one-step epoch never reads
  const std::string run =
      "train --epochs 1 --steps-per-epoch 1 --batch 1 --voxel 1 --threads 1 "
      "--classes 3 --data " +
      (dir / "points").string() + " --out " + (dir / "run").string();
  auto r = fieldkit_test::run_cli(bin, run, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("c.xyz: expected labels in [0, 3) or -100 (--classes 3), got label 3"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "run"));
  write("c.xyz", 0, 0);
  write("e.xyz", 0, -100);  // the held-out file (the last fifth by name)
  r = fieldkit_test::run_cli(bin, run, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("minkowski train --data " + (dir / "points").string() +
                       ": expected held-out files (the last 1 by name) with some labelled point, "
                       "got every held-out point ignored (-100)"),
            std::string::npos)
      << r.err;
  write("e.xyz", 0, 0);
  r = fieldkit_test::run_cli(bin, run, dir);
  EXPECT_EQ(r.status, 0) << r.err;
}

// A cloud without colours trains on its geometry: fed mid-grey, every input
// feature was 0 after centring, a sparse convolution of zeros sees nothing,
// and a floor-and-ball scene trained to a net that called every point floor.
TEST(TrainCli, CloudsWithoutColoursLearnTheirGeometry) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const fs::path dir = fieldkit_test::scratch_dir() / "colourless";
  fs::create_directories(dir / "points");
  for (int s = 0; s < 5; ++s) {  // a 4 x 4 floor (0) and a ball of radius 0.5 on it (1)
    std::ofstream f(dir / "points" / ("s" + std::to_string(s) + ".xyz"));
    for (int i = 0; i < 40; ++i)
      for (int j = 0; j < 40; ++j) f << 0.1 * i << ' ' << 0.1 * j << " 0 0\n";
    const double cx = 1.0 + 0.4 * s, cy = 2.6 - 0.3 * s;
    for (int i = 0; i < 24; ++i)
      for (int j = 0; j < 24; ++j) {
        const double th = 3.14159265 * (i + 0.5) / 24, ph = 6.2831853 * j / 24;
        f << cx + 0.5 * std::sin(th) * std::cos(ph) << ' ' << cy + 0.5 * std::sin(th) * std::sin(ph)
          << ' ' << 0.7 + 0.5 * std::cos(th) << " 1\n";
      }
  }
  auto r = fieldkit_test::run_cli(
      bin,
      "train --epochs 3 --steps-per-epoch 8 --batch 1 --voxel 0.1 --threads 1 --classes 2 "
      "--deterministic --data " +
          (dir / "points").string() + " --out " + (dir / "run").string(),
      dir);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream log(dir / "run" / "log.csv");
  std::string line, last;
  while (std::getline(log, line)) last = line;
  // epoch,loss,val_miou,...: every point called floor scores about 0.4.
  const double miou = std::stod(last.substr(last.find(',', last.find(',') + 1) + 1));
  EXPECT_GT(miou, 0.8) << last;
}

// Mixed precision, the learning curves' input and the classifier path.
TEST(TrainCli, HalfPrecisionAndClassifier) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const fs::path dir =
      fs::temp_directory_path() / ("minkowski_train_cli_half_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // Mixed precision: fp16 (with loss scaling) trains and resumes; bad names are refused.
  const std::string half =
      "--variant 14A --steps-per-epoch 1 --batch 1 --val-scenes 1 --voxel 0.4 --threads 1 "
      "--precision fp16 --out " +
      (dir / "half").string();
  auto r = fieldkit_test::run_cli(bin, "train --epochs 1 " + half, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  // f16 is fp16's other name: the same precision resumes (it was refused as
  // "--precision ?").
  std::string half_f16 = half;
  half_f16.replace(half_f16.find("fp16"), 4, "f16");
  r = fieldkit_test::run_cli(bin, "train --epochs 2 --resume " + half_f16, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "half" / "log.csv"), 3);
  {  // The loss scaler's clean steps carry over the resume: those after the
     // last skipped step of both runs (one step per epoch; skipped_steps is
     // the log's last column). Once the count restarted at the resume.
    std::ifstream log(dir / "half" / "log.csv");
    std::string line;
    std::getline(log, line);
    int64_t clean_since_skip = 0;
    while (std::getline(log, line))
      clean_since_skip = line.substr(line.rfind(',') + 1) == "0" ? clean_since_skip + 1 : 0;
    int64_t tracker = -1;
    for (const auto& [name, t] : minkowski::nn::read_tensors((dir / "half" / "last.ckpt").string()))
      if (name == "loss_scale_growth_tracker") tracker = static_cast<int64_t>(t.item());
    EXPECT_EQ(tracker, clean_since_skip);
  }
  {  // A row for an epoch past the checkpoint (a kill between the two) and a
     // row cut short (no newline) are dropped and that epoch run again: one
     // whole row for it.
    std::ofstream(dir / "half" / "log.csv", std::ios::app) << "3,9,9,9,9,9,9\n4,1";
  }
  r = fieldkit_test::run_cli(bin, "train --epochs 3 --resume " + half, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "half" / "log.csv"), 4);
  const std::string rerun = read_text(dir / "half" / "log.csv");
  EXPECT_EQ(rerun.find("3,9,9,9"), std::string::npos) << rerun;
  EXPECT_EQ(std::count(rerun.begin(), rerun.end(), ','), 4 * 6) << rerun;
  {  // a damaged log is named when the curves are redrawn from it
    std::ofstream(dir / "half" / "log.csv", std::ios::app) << "3,0.5,oops\n";
  }
  r = fieldkit_test::run_cli(bin, "train --epochs 4 --resume " + half, dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("log.csv line 5: expected 7 values, got 3"), std::string::npos) << r.err;
  // The classifier: a narrow ResNet50 (bottlenecks) on generated shapes; its
  // bad options.
  const std::string cls =
      "train --model resnet50 --planes 2,2,2,2 --epochs 1 --steps-per-epoch 1 --batch 2 "
      "--val-scenes 1 --threads 1 --out " +
      (dir / "cls").string();
  r = fieldkit_test::run_cli(bin, cls, dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "cls" / "log.csv"), 2);
  expect_png(dir / "cls" / "curves.png", 1016, 374);
  // predict with the ResNet checkpoint: one class for the generated shape, every
  // point's label, at f32 and bf16; a point file whose points disagree is refused.
  const std::string cls_ckpt = (dir / "cls" / "best.ckpt").string();
  for (const char* p : {"f32", "bf16"}) {
    const std::string labels = (dir / ("cls_" + std::string(p) + ".npy")).string();
    r = fieldkit_test::run_cli(
        bin,
        "predict --model resnet50 --planes 2,2,2,2 --threads 1 --precision " + std::string(p) +
            " --checkpoint " + cls_ckpt + " --labels " + labels,
        dir);
    ASSERT_EQ(r.status, 0) << p << ": " << r.err;
    // One class for the whole shape.
    const std::vector<int64_t> got = fk::read_npy(labels).to_vector<int64_t>();
    ASSERT_FALSE(got.empty());
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](int64_t l) { return l == got[0]; }));
    EXPECT_TRUE(got[0] >= 0 && got[0] < 4) << got[0];
  }
  {
    std::ofstream f(dir / "mixed.xyz");
    for (int i = 0; i < 40; ++i) f << i % 7 << ' ' << i / 7 << ' ' << i % 3 << ' ' << i % 2 << '\n';
  }
  r = fieldkit_test::run_cli(bin,
                             "predict --model resnet50 --planes 2,2,2,2 --checkpoint " + cls_ckpt +
                                 " --input " + (dir / "mixed.xyz").string(),
                             dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("one label for every point of a shape, got labels 0 and 1"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {" --classes 5", "4 classes for the generated data"},
           {" --data " + dir.string(), "no --data with a classifier"}}) {
    // (without --val-scenes, which --data would refuse first)
    std::string given = cls + args;
    given.erase(given.find("--val-scenes 1 "), 15);
    r = fieldkit_test::run_cli(bin, given, dir);
    EXPECT_EQ(r.status, 1) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  r = fieldkit_test::run_cli(bin, "train --model resnet18 --planes 8,0,8,8 --out " + dir.string(),
                             dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("four positive widths a,b,c,d, got '8,0,8,8'"), std::string::npos) << r.err;
  r = fieldkit_test::run_cli(bin, "train --model vgg --out " + dir.string(), dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("minkunet, resnet14, resnet18, resnet34, resnet50 or resnet101"),
            std::string::npos)
      << r.err;
  r = fieldkit_test::run_cli(bin, "train --precision f64 --out " + dir.string(), dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("f32, bf16 or fp16"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

// A ResNet classifier (its dropout draws from the default generator) resumed
// after one epoch ends with the uninterrupted run's weights and log; the
// step schedule decays by --lr-gamma every --lr-step steps.
TEST(TrainCli, AResumedClassifierContinuesTheUninterruptedRun) {
  const fs::path bin = fieldkit_test::sibling_binary("minkowski");
  if (!fs::exists(bin)) GTEST_SKIP() << "minkowski CLI not built";
  const fs::path dir =
      fs::temp_directory_path() / ("minkowski_train_resume_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string common =
      "train --model resnet14 --planes 4,4,4,4 --steps-per-epoch 2 --batch 1 --val-scenes 1 "
      "--threads 1 --deterministic --optimizer sgd --lr 0.1 --schedule step --lr-step 2 "
      "--lr-gamma 0.5 ";
  auto r = fieldkit_test::run_cli(bin, common + "--epochs 3 --out " + (dir / "full").string(), dir);
  ASSERT_EQ(r.status, 0) << r.err;
  r = fieldkit_test::run_cli(bin, common + "--epochs 1 --out " + (dir / "cut").string(), dir);
  ASSERT_EQ(r.status, 0) << r.err;
  r = fieldkit_test::run_cli(bin, common + "--epochs 3 --resume --out " + (dir / "cut").string(),
                             dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_text(dir / "full" / "last.ckpt"), read_text(dir / "cut" / "last.ckpt"));
  // The logs' cells but for the speed column (voxels_per_s).
  auto cells = [](const fs::path& p) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(read_text(p));
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> row;
      std::istringstream fields(line);
      for (std::string c; std::getline(fields, c, ',');) row.push_back(c);
      out.push_back(row);
    }
    const auto speed = std::find(out[0].begin(), out[0].end(), "voxels_per_s") - out[0].begin();
    for (auto& row : out) row.erase(row.begin() + speed);
    return out;
  };
  const auto full = cells(dir / "full" / "log.csv");
  EXPECT_EQ(full, cells(dir / "cut" / "log.csv"));
  // The rate at each epoch's last step (1, 3, 5): 0.1, 0.05, 0.025.
  ASSERT_EQ(full.size(), 4u);
  const auto lr = std::find(full[0].begin(), full[0].end(), "lr") - full[0].begin();
  EXPECT_EQ(full[1][lr], "0.1");
  EXPECT_EQ(full[2][lr], "0.05");
  EXPECT_EQ(full[3][lr], "0.025");
  // The basic-block classifier predicts one class for a generated shape.
  const std::string labels = (dir / "shape.npy").string();
  r = fieldkit_test::run_cli(bin,
                             "predict --model resnet14 --planes 4,4,4,4 --threads 1 --checkpoint " +
                                 (dir / "full" / "last.ckpt").string() + " --labels " + labels,
                             dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const std::vector<int64_t> got = fk::read_npy(labels).to_vector<int64_t>();
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(std::all_of(got.begin(), got.end(), [&](int64_t l) { return l == got[0]; }));
  fs::remove_all(dir);
}

}  // namespace
