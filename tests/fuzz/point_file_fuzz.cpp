// minkowski's point-file readers (PLY, XYZ, NPY) on arbitrary bytes: a point
// cloud or an fk::Error, never a crash or another exception. The first byte
// picks the format (its value mod 3: ply, xyz, npy); the rest is the file. A
// cloud read back must be consistent: xyz a multiple of 3 and finite, colours
// absent or one triple per point, labels absent or one per point.
#include <cmath>
#include <cstdint>

#include "fk/error.h"
#include "fuzz/fuzz_input.h"
#include "minkowski/data/point_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using fieldkit_fuzz::ScratchFile;
  static ScratchFile files[] = {ScratchFile("points", ".ply"), ScratchFile("points", ".xyz"),
                                ScratchFile("points", ".npy")};
  if (size == 0) return 0;
  const std::string& path = files[data[0] % 3].write(data + 1, size - 1);
  minkowski::data::PointCloud cloud;
  try {
    cloud = minkowski::data::read_points(path);
  } catch (const fk::Error&) {
    return 0;
  }
  const size_t n = cloud.xyz.size() / 3;
  if (cloud.xyz.size() % 3 != 0) __builtin_trap();
  if (!cloud.rgb.empty() && cloud.rgb.size() != 3 * n) __builtin_trap();
  if (!cloud.labels.empty() && cloud.labels.size() != n) __builtin_trap();
  for (float v : cloud.xyz)
    if (!std::isfinite(v)) __builtin_trap();
  return 0;
}
