#pragma once
// `minkowski train`, `minkowski predict` and `minkowski bench train`: MinkUNet
// on generated scenes (minkowski/data/scene.h) or point files, and a sparse
// ResNet classifier on generated shapes.
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski_app {

struct TrainOptions {
  // minkunet (segmentation of scenes or point files) or resnet14 ... resnet101
  // (classification of generated shapes, one label per shape).
  std::string model = "minkunet";
  std::string variant;  // MinkUNet layout (minkunet_options); empty: 14A
  std::string planes;   // ResNet stage widths "a,b,c,d"; empty: 64,128,256,512
  std::string data;     // folder of labelled point files; empty: generated data
  int64_t classes = 0;  // 0: the generator's (scenes 5, shapes 4); required with data
  int epochs = 10;
  int steps_per_epoch = 50;
  int batch = 2;
  int val_scenes = 4;
  double voxel = 0.0;  // m; 0: 0.1 for scenes and point files, 0.04 for shapes
  double lr = 0.01;
  std::string optimizer = "adam";  // adam, adamw or sgd
  std::string schedule = "cosine";
  int warmup = 0;
  // --schedule step: the rate is multiplied by lr_gamma every lr_step
  // optimizer steps after the warm-up (0: a third of them, rounded up, so it
  // decays at most twice; it depends on --epochs, as cosine does).
  int64_t lr_step = 0;
  double lr_gamma = 0.1;
  double weight_decay = 0.0;
  double clip = 0.0;
  std::string precision = "f32";  // f32, bf16 or fp16 (autocast; fp16 adds loss scaling)
  std::string device = "cpu";     // cpu, cuda or cuda:N: where the network and features live
  // With a CUDA --device: "device" moves each batch's coordinates there too,
  // so its kernel maps are built on the device; "host" builds them on the
  // host and uploads them.
  std::string coords = "device";
  uint64_t seed = 0;
  int threads = 0;
  std::string out = "minkowski_run";  // folder: log.csv, best.ckpt, last.ckpt
  bool resume = false;
  // minkowski::set_deterministic: one convolution path, not one chosen by
  // timing, so a --seed gives the same weights run to run and across threads.
  bool deterministic = false;
};
int train(const TrainOptions& o);

struct PredictOptions {
  std::string model = "minkunet";  // as TrainOptions::model
  std::string variant;             // as TrainOptions::variant
  std::string planes;              // as TrainOptions::planes
  std::string checkpoint;
  std::string input;  // .ply/.xyz/.txt point file; empty: a generated scene (shape: ResNet)
  uint64_t scene_seed = 1000000;
  double voxel = 0.0;             // m; 0: the checkpoint's (else 0.1 for MinkUNet, 0.04 for ResNet)
  std::string precision = "f32";  // f32, bf16 or fp16 (autocast)
  std::string ply;                // coloured output cloud (ASCII PLY); empty: none
  std::string labels;             // predicted labels (int64 .npy); empty: none
  std::string device = "cpu";     // cpu, cuda or cuda:N: the network, features and coordinates
  int threads = 0;
};
int predict(const PredictOptions& o);

// The checkpoint tensor (f64 scalar) holding the voxel size a net was
// trained at: train writes it into best.ckpt and last.ckpt, predict uses it
// unless --voxel says otherwise, a resume refuses another.
inline constexpr const char* kVoxelTensor = "meta.voxel";

struct BenchTrainOptions {
  std::string variant = "18";
  int64_t points = 50000;
  int steps = 3;
  std::vector<int> threads = {1, 2};
  std::vector<std::string> precisions = {"f32", "bf16"};  // each fused and per-offset
  std::string device = "cpu";  // where the network, features and labels live
  bool device_coords = false;  // coordinates (and so every map) on --device too
  int ops = 0;                 // list the traced step's largest host-time events
  std::string trace;           // write each traced step's chrome trace (PATH.json)
};
int bench_train(const BenchTrainOptions& o);

}  // namespace minkowski_app
