// Kernel maps on a CUDA device: keys, hash table, search, pair layout and the
// row indices, driven from the host (kernels in hash_map.cu, CUB in sort.cu).
#include "minkowski/cuda/device_kernel_map.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/conv_plan.h"
#include "minkowski/cuda/device_buffers.h"
#include "minkowski/cuda/kernels.h"

namespace minkowski::cuda {

namespace {

using buffers::device_i32;
using buffers::device_u64;
using buffers::DeviceTable;
using buffers::i32;
using buffers::u64;

const char* const kWhere = "minkowski::cuda::build_device_kernel_map";

KeyLayout to_kernel_layout(const KernelMapKeyLayout& l, int width) {
  FK_CHECK(width <= kMaxWidth, kWhere,
           "at most " + fk::to_text(kMaxWidth - 1) + " spatial dimensions on the device",
           fk::to_text(width - 1));
  FK_CHECK(l.lo.size() == static_cast<size_t>(width) && l.shift.size() == l.lo.size(), kWhere,
           "a key layout of " + fk::to_text(width) + " columns",
           fk::to_text(l.lo.size()) + " columns");
  FK_CHECK(l.bits <= 63, kWhere,
           "coordinates (padded by the kernel's reach) whose keys pack into 63 bits",
           fk::to_text(l.bits) + " bits");
  KeyLayout k;
  k.width = width;
  for (int c = 0; c < width; ++c) {
    k.lo[c] = l.lo[c];
    k.shift[c] = l.shift[c];
  }
  return k;
}

// Keys of the n rows of coords (n x l.width, on the device) under l.
fk::Tensor pack_on_device(const fk::Tensor& coords, const KeyLayout& l, int device, void* stream,
                          fk::Tensor* rows) {
  const int64_t n = coords.size(0);
  fk::Tensor keys = device_u64(n, device);
  *rows = device_i32(n, device);
  launch_pack_keys(i32(coords), n, l, u64(keys), i32(*rows), stream);
  fk::profile::count_launch();
  return keys;
}

// Host rows (n x width) on `device`.
fk::Tensor upload_rows(const std::vector<int32_t>& rows, int width, int device) {
  const int64_t n = static_cast<int64_t>(rows.size()) / width;
  return fk::from_vector(rows, fk::Dims{n, width}, fk::cuda_device(device));
}

// Pair ids grouped by `rows` (pairs entries, each < n_rows), stably.
DeviceRowIndex group_by(const fk::Tensor& rows, int64_t pairs, int64_t n_rows, int device,
                        void* stream) {
  DeviceRowIndex idx;
  idx.begin = device_i32(n_rows + 1, device);
  idx.pair = device_i32(pairs, device);
  fk::Tensor ids = device_i32(pairs, device), sorted = device_i32(pairs, device);
  launch_iota(i32(ids), pairs, stream);
  fk::profile::count_launch();
  int bits = 1;
  while (bits < 31 && (int64_t{1} << bits) < n_rows) ++bits;
  sort_pairs_i32(i32(rows), i32(ids), i32(sorted), i32(idx.pair), pairs, bits, stream);
  fk::profile::count_launch();
  launch_row_begin(i32(sorted), pairs, n_rows, i32(idx.begin), stream);
  fk::profile::count_launch();
  return idx;
}

void add_row_indices(DeviceKernelMap& m, void* stream) {
  m.by_out = group_by(m.out_rows, m.pairs(), m.out_size, m.device, stream);
  m.by_in = group_by(m.in_rows, m.pairs(), m.in_size, m.device, stream);
}

DeviceKernelMap empty_map(int64_t K, int64_t in_size, int64_t out_size, int device) {
  DeviceKernelMap m;
  m.device = device;
  m.volume = K;
  m.in_size = in_size;
  m.out_size = out_size;
  m.offset_begin.assign(K + 1, 0);
  m.in_rows = device_i32(0, device);
  m.out_rows = device_i32(0, device);
  return m;
}

// K of K x D offsets, after checking both maps are D-dimensional.
int64_t offset_count(int in_width, int out_width, const std::vector<int32_t>& offsets) {
  const int d = in_width - 1;
  FK_CHECK(out_width == in_width, kWhere, "maps of one dimension",
           fk::to_text(d) + " and " + fk::to_text(out_width - 1));
  FK_CHECK(d > 0 && offsets.size() % d == 0, kWhere, "K x D offsets",
           fk::to_text(offsets.size()) + " values for D = " + fk::to_text(d));
  return static_cast<int64_t>(offsets.size()) / d;
}

// Coordinate rows the kernels read as n x width int32: checked before any
// device work (an i64 or host tensor would otherwise be read as device int32).
void check_coordinates(const fk::Tensor& t, const char* what, int device) {
  FK_CHECK(t.defined(), kWhere, std::string(what) + " coordinates", "an undefined tensor");
  FK_CHECK(t.device() == fk::cuda_device(device), kWhere,
           std::string(what) + " coordinates on " + fk::cuda_device(device).str(),
           t.device().str());
  FK_CHECK(t.dtype() == fk::DType::I32 && t.dim() == 2 && t.is_contiguous(), kWhere,
           std::string(what) + " coordinates: contiguous int32 of shape N x (1 + D)",
           std::string(fk::name(t.dtype())) + " " + t.shape().str() +
               (t.is_contiguous() ? "" : " (strided)"));
}

}  // namespace

DeviceKernelMap build_device_kernel_map(const CoordinateMap& in, const CoordinateMap& out,
                                        const std::vector<int32_t>& offsets, int device) {
  const int w = in.width();
  offset_count(w, out.width(), offsets);
  const KernelMapKeyLayout layout = kernel_map_key_layout(in, out, offsets);
  fk::cuda::detail::DeviceGuard guard(device);
  return build_device_kernel_map(upload_rows(in.coordinates(), w, device),
                                 upload_rows(out.coordinates(), w, device), layout, offsets,
                                 device);
}

DeviceKernelMap build_device_kernel_map(const fk::Tensor& in_coords, const fk::Tensor& out_coords,
                                        const KernelMapKeyLayout& layout,
                                        const std::vector<int32_t>& offsets, int device) {
  check_coordinates(in_coords, "input", device);
  check_coordinates(out_coords, "output", device);
  const int w = static_cast<int>(in_coords.size(1)), d = w - 1;
  const int64_t K = offset_count(w, static_cast<int>(out_coords.size(1)), offsets);
  const int64_t n_in = in_coords.size(0), n_out = out_coords.size(0);
  // Row ids (the table's values, the pairs, the row indices) are int32.
  FK_CHECK(n_in < (int64_t{1} << 31) && n_out < (int64_t{1} << 31), kWhere,
           "fewer than 2^31 input and output rows",
           fk::to_text(n_in) + " input and " + fk::to_text(n_out) + " output rows");
  fk::cuda::detail::DeviceGuard guard(device);
  DeviceKernelMap m = empty_map(K, n_in, n_out, device);
  void* stream = fk::cuda::current_stream(device);
  if (n_in == 0 || n_out == 0 || K == 0) {
    add_row_indices(m, stream);
    fk::cuda::after_op(device);
    return m;
  }
  FK_CHECK(K * n_out < (int64_t{1} << 31), kWhere, "offsets x output rows < 2^31",
           fk::to_text(K) + " x " + fk::to_text(n_out));
  const KeyLayout l = to_kernel_layout(layout, w);

  fk::Tensor in_order, out_order0, out_order = device_i32(n_out, device);
  fk::Tensor in_keys = pack_on_device(in_coords, l, device, stream, &in_order);
  fk::Tensor out_keys0 = pack_on_device(out_coords, l, device, stream, &out_order0);
  fk::Tensor out_keys = device_u64(n_out, device);
  sort_pairs_u64(u64(out_keys0), i32(out_order0), u64(out_keys), i32(out_order), n_out, layout.bits,
                 stream);
  fk::profile::count_launch();
  DeviceTable table(n_in, device, stream);
  launch_hash_insert(table.t, u64(in_keys), n_in, stream);
  fk::profile::count_launch();

  // Offset k's key delta: sum_i offset_i << shift of axis i (two's complement).
  std::vector<int64_t> deltas(K, 0);
  for (int64_t k = 0; k < K; ++k) {
    uint64_t delta = 0;
    for (int i = 0; i < d; ++i)
      delta += static_cast<uint64_t>(int64_t{offsets[k * d + i]}) << layout.shift[i + 1];
    deltas[k] = static_cast<int64_t>(delta);
  }
  fk::Tensor dev_deltas = fk::from_vector(deltas, fk::Dims{K}, fk::cuda_device(device));
  fk::Tensor hit = device_i32(K * n_out, device), flag = device_i32(K * n_out, device);
  fk::Tensor pos = device_i32(K * n_out, device), begin = device_i32(K + 1, device);
  launch_kernel_map_search(table.t, u64(out_keys), n_out, u64(dev_deltas), K, i32(hit), i32(flag),
                           stream);
  fk::profile::count_launch();
  exclusive_sum_i32(i32(flag), i32(pos), K * n_out, stream);
  fk::profile::count_launch();
  // The pair count sizes the outputs: read the offsets' ranges (a host read).
  launch_kernel_map_pairs(i32(hit), i32(pos), i32(flag), i32(out_order), n_out, K, nullptr, nullptr,
                          i32(begin), stream);
  fk::profile::count_launch();
  const std::vector<int32_t> ob = begin.to_vector<int32_t>();
  m.offset_begin.assign(ob.begin(), ob.end());
  m.in_rows = device_i32(m.pairs(), device);
  m.out_rows = device_i32(m.pairs(), device);
  launch_kernel_map_pairs(i32(hit), i32(pos), i32(flag), i32(out_order), n_out, K, i32(m.in_rows),
                          i32(m.out_rows), i32(begin), stream);
  fk::profile::count_launch();
  add_row_indices(m, stream);
  fk::cuda::after_op(device);
  return m;
}

DeviceKernelMap upload_kernel_map(const KernelMap& map, int device) {
  // Pair ids, the identity's rows and the by-row CSRs below are i32.
  check_device_pair_count("minkowski::cuda::upload_kernel_map", map.pairs());
  const fk::profile::TraceScope trace("minkowski.kernel_map.upload");
  fk::cuda::detail::DeviceGuard guard(device);
  DeviceKernelMap m = empty_map(map.volume, map.in_size, map.out_size, device);
  m.offset_begin = map.offset_begin;
  const int64_t P = map.pairs();
  void* stream = fk::cuda::current_stream(device);
  if (map.identity) {
    // Pair p is (p, p), and row r's one pair is r: made on the device, one
    // buffer for both sides and one index for both directions.
    m.in_rows = m.out_rows = device_i32(P, device);
    launch_iota(i32(m.in_rows), P, stream);
    fk::profile::count_launch();
    m.by_out.pair = m.in_rows;
    m.by_out.begin = device_i32(P + 1, device);
    launch_iota(i32(m.by_out.begin), P + 1, stream);
    fk::profile::count_launch();
    m.by_in = m.by_out;
    fk::cuda::after_op(device);
    return m;
  }
  // Straight from the map's arrays: no host copy of the pairs on the way.
  m.in_rows = device_i32(P, device);
  m.out_rows = device_i32(P, device);
  const size_t bytes = static_cast<size_t>(P) * sizeof(int32_t);
  fk::cuda::copy_bytes(m.in_rows.data_ptr(), device, map.in_rows.data(), -1, bytes);
  fk::cuda::copy_bytes(m.out_rows.data_ptr(), device, map.out_rows.data(), -1, bytes);
  add_row_indices(m, stream);
  fk::cuda::after_op(device);
  return m;
}

DeviceKernelMap transposed(const DeviceKernelMap& map) {
  DeviceKernelMap t = map;
  std::swap(t.in_size, t.out_size);
  std::swap(t.in_rows, t.out_rows);
  std::swap(t.by_in, t.by_out);
  // The implicit convolution's row masks follow the swapped indices, in a
  // cache of the transposed map's own.
  t.row_masks = std::make_shared<DeviceRowMaskCache>();
  std::lock_guard<std::mutex> lock(map.row_masks->mu);
  t.row_masks->by_out = map.row_masks->by_in;
  t.row_masks->by_in = map.row_masks->by_out;
  return t;
}

const DeviceKernelMap& device_copy_of(const KernelMap& map, int device) {
  // A transposed convolution's map is its strided convolution's, swapped: the
  // copy that map already has there serves both, without a second upload.
  const std::shared_ptr<const void> other = map.transposed_device_copy(device);
  auto copy = map.device_copy(device, [&] {
    return std::static_pointer_cast<const void>(std::make_shared<const DeviceKernelMap>(
        other ? transposed(*static_cast<const DeviceKernelMap*>(other.get()))
              : upload_kernel_map(map, device)));
  });
  // The map outlives the call and keeps its copies: the reference stays valid.
  return *static_cast<const DeviceKernelMap*>(copy.get());
}

std::shared_ptr<KernelMap> DeviceKernelMap::to_host() const {
  auto m = std::make_shared<KernelMap>();
  m->volume = volume;
  m->in_size = in_size;
  m->out_size = out_size;
  m->offset_begin = offset_begin;
  // The device rows stay alive with the fetch (the host map adopts this map
  // as its device copy too, so their lifetimes are the same anyway).
  auto pairs = std::make_shared<DeferredPairs>(
      [in = in_rows, out = out_rows](LargeArray<int32_t>& host_in, LargeArray<int32_t>& host_out) {
        const fk::profile::TraceScope trace("minkowski.kernel_map.download");
        const std::vector<int32_t> i = in.to_vector<int32_t>(), o = out.to_vector<int32_t>();
        host_in.assign(i.begin(), i.end());
        host_out.assign(o.begin(), o.end());
      });
  m->in_rows = PairRows::deferred(pairs, false);
  m->out_rows = PairRows::deferred(pairs, true);
  return m;
}

std::vector<int32_t> device_hash_lookup(const std::vector<int32_t>& coords,
                                        const std::vector<int32_t>& queries, int width,
                                        const KernelMapKeyLayout& layout, int device) {
  const KeyLayout l = to_kernel_layout(layout, width);
  fk::cuda::detail::DeviceGuard guard(device);
  const int64_t n = static_cast<int64_t>(coords.size()) / width;
  const int64_t q = static_cast<int64_t>(queries.size()) / width;
  void* stream = fk::cuda::current_stream(device);
  fk::Tensor rows, qrows;
  fk::Tensor keys = pack_on_device(upload_rows(coords, width, device), l, device, stream, &rows);
  fk::Tensor qkeys = pack_on_device(upload_rows(queries, width, device), l, device, stream, &qrows);
  DeviceTable table(n, device, stream);
  launch_hash_insert(table.t, u64(keys), n, stream);
  fk::profile::count_launch();
  fk::Tensor found = device_i32(q, device);
  launch_hash_lookup(table.t, u64(qkeys), q, i32(found), stream);
  fk::profile::count_launch();
  return found.to_vector<int32_t>();
}

}  // namespace minkowski::cuda
