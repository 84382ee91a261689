#pragma once
// The fixture and timed cases of `minkowski bench ops` (bench_ops.h), shared
// by the file that times them and the file with the per-element, norm and
// index-driven ops' cases.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "minkowski/minkowski.h"

namespace minkowski_app::ops_bench {

// One timed run: `bytes` are the effective bytes it must move at the least.
struct Case {
  std::string op, pass;
  double bytes;
  std::function<void()> run;
};

// Everything the cases run on, built once (the cases refer to it).
struct Fixture {
  std::string source;
  int64_t input_rows = 0, rows = 0, coarse_rows = 0, channels = 0;
  fk::DType dtype = fk::DType::F32;
  double elem = 4;  // bytes per feature element
  std::shared_ptr<minkowski::CoordinateManager> mgr;
  minkowski::MapKey fine;
  std::shared_ptr<const minkowski::KernelMap> k2, k3,
      up;                                             // fine -> stride 2 (kernel 2, 3), and back
  fk::Tensor f, fc, gc, gf;                           // features and gradients, fine and coarse
  std::shared_ptr<const minkowski::RowGroups> items;  // the scene's batch items
  fk::Tensor glob;                                    // one global row per item
  minkowski::RowGroups glob_rows;                     // the glob row of each fine row
};

// Uniform in [-1, 1), reproducible from the seed.
fk::Tensor random_uniform(fk::Dims shape, uint64_t seed, fk::DType dt);

// BatchNorm (train) and InstanceNorm, ReLU: N x C in, N x C out.
void add_norm_and_relu_cases(const Fixture& fx, std::vector<Case>& cases);
// Pruning, union, interpolation and spmm: rows moved through an index built
// here, once, before any timing.
void add_indexed_cases(const Fixture& fx, std::vector<Case>& cases);

}  // namespace minkowski_app::ops_bench
