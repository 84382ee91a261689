#pragma once
// `minkowski bench conv`: times the kernel map, the convolution forward and
// backward (fused, chunked and per-offset copy paths) on a synthetic or given
// scene, beside this machine's sgemm rate.
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski_app {

struct BenchConvOptions {
  int64_t points = 100000;
  std::vector<int> channels = {64};  // several: the ladder (bench_conv_ladder.h)
  int out_channels = 0;              // 0: same as channels
  int kernel = 3;
  int stride = 1;
  std::string dtype = "f32";
  int threads = 0;  // 0: fk's default
  int repeats = 5;
  double chunk_mb = 4;  // the chunked variant's ME_FUSED_COPY_MAX_MB
  std::string scene;    // N x 4 int32 .npy (batch, x, y, z)
  std::string json;
};

int bench_conv(const BenchConvOptions& o);

}  // namespace minkowski_app
