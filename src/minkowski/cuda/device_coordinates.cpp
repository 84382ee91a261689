// Coordinate maps on a CUDA device, driven from the host (kernels in
// coordinates.cu and hash_map.cu, sorts and scans in sort.cu). Host reads:
// the column bounds (3 x width values) and the number of unique rows.
#include "minkowski/cuda/device_coordinates.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/coords/kernel_map_layout.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/cuda/device_buffers.h"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using buffers::device_i32;
using buffers::device_u64;
using buffers::DeviceTable;
using buffers::i32;
using buffers::u64;

// Per column of rows (n x width, on the device): min, max, changes between
// consecutive rows (3 x width on the host).
std::vector<int64_t> column_stats(const fk::Tensor& rows, int width, int device, void* stream) {
  // The kernel keeps kMaxWidth columns in registers (every entry point checks
  // the width; this guards the kernel's own assumption).
  FK_CHECK(width >= 1 && width <= kMaxWidth, "minkowski::cuda column statistics",
           "1.." + fk::to_text(kMaxWidth) + " columns", fk::to_text(width));
  fk::Tensor stats = fk::empty({3 * width}, {fk::DType::I64, fk::cuda_device(device)});
  launch_column_stats(i32(rows), rows.size(0), width, stats.data<int64_t>(), stream);
  fk::profile::count_launch();
  return stats.to_vector<int64_t>();
}

// The CPU packer's layout of a map's bounds (coordinate_map.cpp): x_D in the
// lowest bits, the batch in the highest, each column the bits of its extent.
KeyLayout packer_layout(const std::vector<int32_t>& lo, const std::vector<int32_t>& hi,
                        const char* where, int* key_bits = nullptr) {
  const int w = static_cast<int>(lo.size());
  KeyLayout l;
  l.width = w;
  int bits = 0;
  for (int c = w - 1; c >= 0; --c) {
    const int64_t extent = int64_t{hi[c]} - lo[c];
    int b = 0;
    while (b < 63 && (int64_t{1} << b) <= extent) ++b;
    l.lo[c] = lo[c];
    l.hi[c] = hi[c];
    l.shift[c] = b == 0 ? 0 : bits;
    bits += b;
  }
  FK_CHECK(bits <= 63, where, "coordinates whose per-axis extents pack into 63 bits on the device",
           fk::to_text(bits) + " bits (" + fk::to_text(w - 1) + "-D)");
  if (key_bits) *key_bits = bits;
  return l;
}

// The map's rows in `order` (the header's steps 2-4) from the keys of n > 0
// input rows (rows0: 0..n-1).
struct Dedup {
  fk::Tensor map_rows;  // input row of each map row
  fk::Tensor row_key;   // key of each map row
  fk::Tensor inverse;   // map row of each input row
  int64_t size = 0;
};
Dedup deduplicate(const fk::Tensor& keys, const fk::Tensor& rows0, int64_t n, int bits,
                  RowOrder order, int device, void* stream) {
  fk::Tensor sorted_keys = device_u64(n, device), sorted_rows = device_i32(n, device);
  sort_pairs_u64(u64(keys), i32(rows0), u64(sorted_keys), i32(sorted_rows), n, bits, stream);
  fk::profile::count_launch();
  fk::Tensor head = device_i32(n + 1, device), run = device_i32(n + 1, device);
  launch_run_heads(u64(sorted_keys), n, i32(head), stream);
  fk::profile::count_launch();
  exclusive_sum_i32(i32(head), i32(run), n + 1, stream);
  fk::profile::count_launch();
  Dedup d;
  d.size = run.narrow(0, n, 1).to_vector<int32_t>()[0];
  fk::Tensor run_row = device_i32(d.size, device), run_key = device_u64(d.size, device);
  fk::Tensor run_of = device_i32(n, device);
  launch_runs(u64(sorted_keys), i32(sorted_rows), i32(head), i32(run), n, i32(run_row),
              u64(run_key), i32(run_of), stream);
  fk::profile::count_launch();
  if (order == RowOrder::kKeys) {
    d.map_rows = run_row;
    d.row_key = run_key;
    d.inverse = run_of;
    return d;
  }
  fk::Tensor first = device_i32(n + 1, device), id = device_i32(n + 1, device);
  launch_first_flags(i32(run_row), i32(run_of), n, i32(first), stream);
  fk::profile::count_launch();
  exclusive_sum_i32(i32(first), i32(id), n + 1, stream);
  fk::profile::count_launch();
  d.map_rows = device_i32(d.size, device);
  d.row_key = device_u64(d.size, device);
  d.inverse = device_i32(n, device);
  launch_first_order(i32(run_row), i32(run_of), i32(first), i32(id), u64(keys), n, i32(d.inverse),
                     i32(d.map_rows), u64(d.row_key), stream);
  fk::profile::count_launch();
  return d;
}

// The map of rows (n x width i32, contiguous, on `device`) at tensor stride ts.
DeviceUnique make_map(const fk::Tensor& rows, std::vector<int32_t> ts, RowOrder order, int device,
                      const char* where) {
  const int w = static_cast<int>(rows.size(1));
  const int64_t n = rows.size(0);
  // The deduplication's scans run over n + 1 int32 entries.
  FK_CHECK(n < (int64_t{1} << 31) - 1, where, "fewer than 2^31 - 1 coordinates", fk::to_text(n));
  fk::cuda::detail::DeviceGuard guard(device);
  void* stream = fk::cuda::current_stream(device);
  DeviceUnique r;
  DeviceCoordinateMap& m = r.map;
  m.device = device;
  m.width = w;
  m.tensor_stride = std::move(ts);
  m.lo.assign(w, 0);
  m.hi.assign(w, 0);
  if (n > 0) {
    const std::vector<int64_t> stats = column_stats(rows, w, device, stream);
    for (int c = 0; c < w; ++c) {
      m.lo[c] = static_cast<int32_t>(stats[c]);
      m.hi[c] = static_cast<int32_t>(stats[w + c]);
    }
  }
  int bits = 0;
  const KeyLayout l = packer_layout(m.lo, m.hi, where, &bits);
  fk::Tensor keys = device_u64(n, device), rows0 = device_i32(n, device);
  launch_pack_keys(i32(rows), n, l, u64(keys), i32(rows0), stream);
  fk::profile::count_launch();
  Dedup d;
  if (n > 0) {
    d = deduplicate(keys, rows0, n, bits, order, device, stream);
  } else {
    d.map_rows = d.inverse = device_i32(0, device);
    d.row_key = device_u64(0, device);
  }
  m.size = d.size;
  m.coordinates = fk::empty({m.size, w}, {fk::DType::I32, fk::cuda_device(device)});
  launch_gather_coordinates(i32(rows), w, i32(d.map_rows), m.size, i32(m.coordinates), stream);
  fk::profile::count_launch();
  DeviceTable table(m.size, device, stream);
  launch_hash_insert(table.t, u64(d.row_key), m.size, stream);
  fk::profile::count_launch();
  m.table_keys = table.keys;
  m.table_values = table.values;
  r.unique_rows = d.map_rows;
  r.inverse = d.inverse;
  fk::cuda::after_op(device);
  return r;
}

void check_map(const DeviceCoordinateMap& m, const char* where) {
  FK_CHECK(m.coordinates.defined() && m.table_keys.defined(), where,
           "a map built by unique_coordinates, stride_coordinates or expand_coordinates",
           "an empty DeviceCoordinateMap");
}

}  // namespace

DeviceUnique unique_coordinates(const fk::Tensor& coordinates,
                                const std::vector<int32_t>& tensor_stride, RowOrder order) {
  const char* where = "minkowski::cuda::unique_coordinates";
  FK_CHECK(coordinates.defined(), where, "a coordinate tensor", "an undefined tensor");
  FK_CHECK(coordinates.device().is_cuda(), where, "coordinates on a CUDA device",
           coordinates.device().str());
  FK_CHECK(coordinates.dtype() == fk::DType::I32, where, "int32 coordinates",
           std::string(fk::name(coordinates.dtype())) + " coordinates");
  FK_CHECK(coordinates.dim() == 2 && coordinates.size(1) >= 2, where,
           "coordinates of shape N x (1 + D) (batch, x_1..x_D), D >= 1", coordinates.shape().str());
  const int w = static_cast<int>(coordinates.size(1));
  FK_CHECK(w <= kMaxWidth, where,
           "at most " + fk::to_text(kMaxWidth - 1) + " spatial dimensions on the device",
           fk::to_text(w - 1));
  auto ts = expand_axes(tensor_stride, w - 1, where, "tensor stride");
  return make_map(coordinates.contiguous(), std::move(ts), order, coordinates.device().index,
                  where);
}

DeviceCoordinateMap stride_coordinates(const DeviceCoordinateMap& in,
                                       const std::vector<int32_t>& stride, RowOrder order) {
  const char* where = "minkowski::cuda::stride_coordinates";
  check_map(in, where);
  const int d = in.dimension();
  const auto s = expand_axes(stride, d, where, "stride");
  std::vector<int32_t> ts(d);
  bool unit = true;
  for (int a = 0; a < d; ++a) {
    const int64_t t = int64_t{in.tensor_stride[a]} * s[a];
    FK_CHECK(t <= kCoordinateLimit, where, "tensor strides of at most 2^30",
             fk::to_text(in.tensor_stride[a]) + " x " + fk::to_text(s[a]) + " on axis " +
                 fk::to_text(a));
    ts[a] = static_cast<int32_t>(t);
    unit = unit && s[a] == 1;
  }
  if (unit) return in;
  for (int a = 0; a < d && in.size > 0; ++a) {
    // Flooring is monotone: the column's minimum floors to the smallest value.
    const int64_t lo = in.lo[a + 1], t = ts[a], q = lo >= 0 ? lo / t : -((-lo + t - 1) / t);
    FK_CHECK(q * t >= std::numeric_limits<int32_t>::min(), where,
             "strided coordinates within int32",
             "coordinate " + fk::to_text(lo) + " on axis " + fk::to_text(a) +
                 " floored to a multiple of " + fk::to_text(t));
  }
  fk::cuda::detail::DeviceGuard guard(in.device);
  void* stream = fk::cuda::current_stream(in.device);
  fk::Tensor step = fk::from_vector(ts, fk::Dims{d}, fk::cuda_device(in.device));
  fk::Tensor rows = fk::empty({in.size, in.width}, {fk::DType::I32, fk::cuda_device(in.device)});
  launch_floor_coordinates(i32(in.coordinates), in.size, in.width, i32(step), i32(rows), stream);
  fk::profile::count_launch();
  return make_map(rows, std::move(ts), order, in.device, where).map;
}

DeviceCoordinateMap expand_coordinates(const DeviceCoordinateMap& in,
                                       const std::vector<int32_t>& offsets,
                                       const std::vector<int32_t>& out_ts) {
  const char* where = "minkowski::cuda::expand_coordinates";
  check_map(in, where);
  const int d = in.dimension();
  FK_CHECK(offsets.size() % d == 0, where, "K x D offsets",
           fk::to_text(offsets.size()) + " values for D = " + fk::to_text(d));
  auto ts = expand_axes(out_ts, d, where, "tensor stride");
  const int64_t K = static_cast<int64_t>(offsets.size()) / d;
  FK_CHECK(in.size * K < (int64_t{1} << 31), where, "rows x offsets < 2^31",
           fk::to_text(in.size) + " x " + fk::to_text(K));
  for (int a = 0; a < d && in.size > 0; ++a)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t o = offsets[k * d + a];
      FK_CHECK(in.lo[a + 1] + o >= std::numeric_limits<int32_t>::min() &&
                   in.hi[a + 1] + o <= std::numeric_limits<int32_t>::max(),
               where, "expanded coordinates within int32",
               "offset " + fk::to_text(o) + " on axis " + fk::to_text(a) +
                   " moving coordinates in [" + fk::to_text(in.lo[a + 1]) + ", " +
                   fk::to_text(in.hi[a + 1]) + "] out of it");
    }
  fk::cuda::detail::DeviceGuard guard(in.device);
  void* stream = fk::cuda::current_stream(in.device);
  fk::Tensor off = fk::from_vector(offsets, fk::Dims{static_cast<int64_t>(offsets.size())},
                                   fk::cuda_device(in.device));
  fk::Tensor rows =
      fk::empty({in.size * K, in.width}, {fk::DType::I32, fk::cuda_device(in.device)});
  launch_expand_coordinates(i32(in.coordinates), in.size, in.width, i32(off), K, i32(rows), stream);
  fk::profile::count_launch();
  return make_map(rows, std::move(ts), RowOrder::kFirstOccurrence, in.device, where).map;
}

fk::Tensor lookup_coordinates(const DeviceCoordinateMap& map, const fk::Tensor& queries) {
  const char* where = "minkowski::cuda::lookup_coordinates";
  check_map(map, where);
  FK_CHECK(queries.defined() && queries.device() == fk::cuda_device(map.device), where,
           "queries on the map's device " + fk::cuda_device(map.device).str(),
           queries.defined() ? queries.device().str() : "an undefined tensor");
  FK_CHECK(queries.dtype() == fk::DType::I32 && queries.dim() == 2 && queries.size(1) == map.width,
           where, "int32 queries of shape Q x " + fk::to_text(map.width),
           std::string(fk::name(queries.dtype())) + " " + queries.shape().str());
  fk::cuda::detail::DeviceGuard guard(map.device);
  const fk::Tensor q = queries.contiguous();
  const KeyLayout l = packer_layout(map.lo, map.hi, where);
  const HashTable t{u64(map.table_keys), i32(map.table_values), map.table_keys.size(0)};
  fk::Tensor found = device_i32(q.size(0), map.device);
  launch_lookup_coordinates(t, l, i32(q), q.size(0), i32(found),
                            fk::cuda::current_stream(map.device));
  fk::profile::count_launch();
  fk::cuda::after_op(map.device);
  return found;
}

DeviceKernelMap build_device_kernel_map(const DeviceCoordinateMap& in,
                                        const DeviceCoordinateMap& out,
                                        const std::vector<int32_t>& offsets) {
  const char* where = "minkowski::cuda::build_device_kernel_map";
  check_map(in, where);
  check_map(out, where);
  FK_CHECK(in.device == out.device, where, "maps on one device",
           fk::to_text(in.device) + " and " + fk::to_text(out.device));
  FK_CHECK(in.width == out.width, where, "maps of one dimension",
           fk::to_text(in.dimension()) + " and " + fk::to_text(out.dimension()));
  FK_CHECK(offsets.size() % in.dimension() == 0, where, "K x D offsets",
           fk::to_text(offsets.size()) + " values for D = " + fk::to_text(in.dimension()));
  const int w = in.width;
  kernel_map_build::LayoutInputs maps;
  maps.in_lo.assign(in.lo.begin(), in.lo.end());
  maps.in_hi.assign(in.hi.begin(), in.hi.end());
  maps.out_lo.assign(out.lo.begin(), out.lo.end());
  maps.out_hi.assign(out.hi.begin(), out.hi.end());
  maps.out_changes.assign(w, 0);
  if (out.size > 1) {
    fk::cuda::detail::DeviceGuard guard(out.device);
    const std::vector<int64_t> stats =
        column_stats(out.coordinates, w, out.device, fk::cuda::current_stream(out.device));
    for (int c = 1; c < w; ++c) maps.out_changes[c] = stats[2 * w + c];
  }
  const KernelMapKeyLayout layout = kernel_map_key_layout(maps, offsets);
  return build_device_kernel_map(in.coordinates, out.coordinates, layout, offsets, in.device);
}

}  // namespace minkowski::cuda
