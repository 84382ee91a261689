// Coordinates as outside input gives them to minkowski (a scene file's rows,
// after fk::read_npy): the first bytes pick the dimension D (1-4), a stride
// (1-4) and a kernel size (1-4), the rest is int32 rows [batch, x_1..x_D].
// Inserting them, striding and building the kernel maps (forward and
// transposed, at both strides) must give a map or an fk::Error (e.g. a
// coordinate outside [-2^30, 2^30]), never a crash, UB or another exception;
// a map's pairs must point at rows that exist.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "minkowski/coords/coordinate_manager.h"

namespace {

void check_pairs(const minkowski::KernelMap& m) {
  if (m.identity) return;
  for (int64_t p = 0; p < m.pairs(); ++p)
    if (m.in_rows[p] < 0 || m.in_rows[p] >= m.in_size || m.out_rows[p] < 0 ||
        m.out_rows[p] >= m.out_size)
      __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace minkowski;
  if (size < 3) return 0;
  const int d = 1 + data[0] % 4;
  const int32_t stride = 1 + data[1] % 4, kernel = 1 + data[2] % 4;
  const int64_t n = static_cast<int64_t>((size - 3) / (4 * (d + 1)));
  std::vector<int32_t> rows(static_cast<size_t>(n * (d + 1)));
  if (!rows.empty()) std::memcpy(rows.data(), data + 3, rows.size() * 4);
  try {
    CoordinateManager mgr(d);
    const MapKey in = mgr.insert(fk::from_vector(rows, fk::Dims{n, d + 1}), {1}).key;
    const MapKey out = mgr.stride(in, {stride});
    const KernelRegion region = KernelRegion::cube({kernel});
    check_pairs(*mgr.kernel_map(in, in, region, false));
    check_pairs(*mgr.kernel_map(in, out, region, false));
    check_pairs(*mgr.kernel_map(out, in, region, true));
    mgr.kernel_map(in, in, region, false)->by_in();
  } catch (const fk::Error&) {
  }
  return 0;
}
