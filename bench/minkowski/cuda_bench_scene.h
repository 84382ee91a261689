#pragma once
// The scene the minkowski CUDA benchmarks run on: $MINKOWSKI_CUDA_BENCH_SCENE,
// else ../shared/data/indoor_scene_100k.npy or
// /work/shared/data/indoor_scene_100k.npy when present, else the synthetic
// 100k scene of `minkowski bench conv --points 100000`. Rows [batch, x, y, z].
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../../apps/minkowski/scene.h"

namespace minkowski_bench {

struct SceneRows {
  std::string source;  // the file, or "synthetic(100000)"
  std::vector<int32_t> rows;
};

inline SceneRows load_scene_rows() {
  std::string path;
  if (const char* p = std::getenv("MINKOWSKI_CUDA_BENCH_SCENE")) {
    path = p;
  } else {
    for (const char* p :
         {"../shared/data/indoor_scene_100k.npy", "/work/shared/data/indoor_scene_100k.npy"})
      if (std::filesystem::exists(p)) {
        path = p;
        break;
      }
  }
  if (path.empty()) return {"synthetic(100000)", minkowski_app::synthetic_scene(100000).rows};
  return {path, minkowski_app::read_scene(path)};
}

}  // namespace minkowski_bench
