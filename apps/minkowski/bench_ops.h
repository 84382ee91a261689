#pragma once
// `minkowski bench ops`: times the forward and backward of the memory-bound
// sparse operations (local pooling, unpooling, global pooling, broadcast,
// BatchNorm in train mode, InstanceNorm, ReLU, pruning, union, interpolation,
// spmm) on a scene, as effective bytes per second beside a STREAM triad
// measured in the same run, at each requested thread count. What an op needs
// besides features (maps, masks, points, coordinate lists) is built before
// timing: pruning and union are timed on their features only.
//
// Effective bytes are what an op must move at the least: its input and
// output features once each, the index it walks (kernel-map row index: 12
// bytes per pair + 8 per row; row grouping or segment labels: 4 bytes per
// row; a gather/scatter index: 8 bytes per row; a coordinate list: 16 bytes
// plus a value per entry) and, for max, the arg-max rows (4 bytes per
// element). Data read twice or write-allocate
// traffic are not counted, as STREAM does not count them. Each timed run
// starts from cold caches (a buffer of twice the L3, sysconf's, is read
// first), triad passes included.
#include <cstdint>
#include <string>
#include <vector>

namespace minkowski_app {

struct BenchOpsOptions {
  std::string scene = "../shared/data/indoor_scene_100k.npy";  // N x 4 int32/int64 .npy
  int64_t points = 0;  // > 0: a synthetic scene of this many voxels instead
  int channels = 64;
  std::string dtype = "f32";
  std::vector<int> threads{1, 2};
  int repeats = 5;         // timed runs per measurement (the best is reported)
  int64_t triad_mib = 16;  // per triad array (48 MiB a pass, from cold caches)
  int64_t evict_mib = -1;  // read before each timed run (0: warm; -1: 2 x L3, >= 128)
  std::string json;
};

int bench_ops(const BenchOpsOptions& o);

}  // namespace minkowski_app
