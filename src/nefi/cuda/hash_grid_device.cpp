// The hash-grid encoding on a CUDA device (field/hash_grid_device.h): the
// points' inverse map built on the host, the launches of hash_grid.cu on the
// device's current stream, and the autograd node. Nothing is read back to
// the host: a step through it can be captured (the map is built by the
// first forward on a stage's grid, an eager step).
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "nefi/cuda/hash_grid_kernels.h"
#include "nefi/field/hash_grid_device.h"

namespace nefi {
namespace {

constexpr const char* kWhere = "nefi::hash_grid_encode";

// Calls f(row, vertex) for each vertex of point x's cell at level c.
template <int D, typename F>
void for_each_vertex(const float* x, const cuda::HashGridLevel& c, F&& f) {
  int64_t row[1 << D];
  float weight[1 << D];
  cuda::hash_grid_corners<D>(x, c, row, weight);
  for (int k = 0; k < (1 << D); ++k) f(row[k], k);
}

// The inverse map of n points (host arrays): counts per row, then each
// level's rows filled in point order by one thread (levels own disjoint rows).
template <int D>
void fill_inverse(const float* x, int64_t n, const cuda::HashGridLevels& L,
                  std::vector<int64_t>& start, std::vector<int32_t>& contribution) {
  fk::parallel_for(0, L.count, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t l = lo; l < hi; ++l)
      for (int64_t i = 0; i < n; ++i)
        for_each_vertex<D>(x + i * D, L.level[l], [&](int64_t row, int) { ++start[row + 1]; });
  });
  for (size_t e = 1; e < start.size(); ++e) start[e] += start[e - 1];
  contribution.resize(static_cast<size_t>(start.back()));
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  fk::parallel_for(0, L.count, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t l = lo; l < hi; ++l)
      for (int64_t i = 0; i < n; ++i)
        for_each_vertex<D>(x + i * D, L.level[l], [&](int64_t row, int k) {
          contribution[next[row]++] = static_cast<int32_t>((i << D) | k);
        });
  });
}

cuda::HashGridInverse inverse_of(const HashGridPoints& p) {
  cuda::HashGridInverse inv;
  inv.start = p.start.data<int64_t>();
  inv.contribution = p.contribution.data<int32_t>();
  inv.chunk_start = p.chunk_start.data<int64_t>();
  inv.chunk_row = p.chunk_row.data<int32_t>();
  inv.entries = p.start.numel() - 1;
  inv.chunks = p.chunks;
  return inv;
}

struct HashGridDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const HashGridPoints> points;
  cuda::HashGridLevels levels;
  fk::Tensor level_weight;  // the device row the forward read (read again when this runs)
  fk::Device device;
  const char* name() const override { return "HashGridEncodeDeviceBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("hash_grid_encode_device_backward");
    fk::cuda::detail::DeviceGuard guard(device.index);
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    g = g.to(fk::DType::F32).contiguous();
    const cuda::HashGridInverse inv = inverse_of(*points);
    const fk::TensorOptions f32{fk::DType::F32, device};
    fk::Tensor partial = fk::empty({points->chunks, levels.features}, f32);
    fk::Tensor out = fk::empty({inv.entries, levels.features}, f32);
    cuda::launch_hash_grid_encode_backward(
        levels, inv, points->coords.data<float>(), level_weight.data<float>(), g.data<float>(),
        partial.data<float>(), out.data<float>(), fk::cuda::current_stream(device.index));
    for (int k = points->chunks > 0 ? 2 : 1; k > 0; --k) fk::profile::count_launch();
    fk::cuda::after_op(device.index);
    return {out};
  }
};

}  // namespace

std::shared_ptr<const HashGridPoints> hash_grid_points(const fk::Tensor& coords,
                                                       const HashGridLayout& layout,
                                                       fk::Device device) {
  FK_CHECK(device.is_cuda(), kWhere, "a CUDA device for the points", device.str());
  fk::check_usable(device, kWhere);
  const int d = layout.ndim;
  FK_CHECK(coords.dim() == 2 && coords.size(1) == d && coords.dtype() == fk::DType::F32 &&
               coords.device().is_cpu(),
           kWhere, "f32 host coordinates (N, " + fk::to_text(d) + ")",
           std::string(fk::name(coords.dtype())) + " " + coords.shape().str() + " on " +
               coords.device().str());
  const int64_t n = coords.size(0);
  FK_CHECK((n << d) < (int64_t{1} << 31), kWhere,
           "fewer than 2^" + fk::to_text(31 - d) + " points on a device",
           fk::to_text(n) + " points");
  fk::profile::OpScope scope("hash_grid_points");
  const fk::Tensor x = coords.contiguous();
  const cuda::HashGridLevels L = hash_grid_levels(layout);
  std::vector<int64_t> start(static_cast<size_t>(layout.entries) + 1, 0);
  std::vector<int32_t> contribution;
  try {
    if (d == 1) fill_inverse<1>(x.data<float>(), n, L, start, contribution);
    if (d == 2) fill_inverse<2>(x.data<float>(), n, L, start, contribution);
    if (d == 3) fill_inverse<3>(x.data<float>(), n, L, start, contribution);
  } catch (const std::bad_alloc&) {
    const double gb = static_cast<double>(n) * static_cast<double>(L.count << d) * 4e-9;
    throw fk::Error(kWhere, "an inverse map that fits the host's memory",
                    fk::to_text(n) + " points x " + fk::to_text(L.count) + " levels x " +
                        fk::to_text(1 << d) + " vertices (" + fk::to_text(gb) + " GB)");
  }
  std::vector<int64_t> chunk_start(start.size(), 0);
  std::vector<int32_t> chunk_row;
  for (int64_t e = 0; e < layout.entries; ++e) {
    const int64_t chunks =
        (start[e + 1] - start[e] + cuda::kHashGridChunk - 1) / cuda::kHashGridChunk;
    chunk_start[e + 1] = chunk_start[e] + chunks;
    chunk_row.insert(chunk_row.end(), static_cast<size_t>(chunks), static_cast<int32_t>(e));
  }
  auto p = std::make_shared<HashGridPoints>();
  p->coords = x.to(device);
  p->start = fk::from_vector(start, fk::Dims{std::ssize(start)}, device);
  p->contribution = fk::from_vector(contribution, fk::Dims{std::ssize(contribution)}, device);
  p->chunk_start = fk::from_vector(chunk_start, fk::Dims{std::ssize(chunk_start)}, device);
  p->chunk_row = fk::from_vector(chunk_row, fk::Dims{std::ssize(chunk_row)}, device);
  p->chunks = std::ssize(chunk_row);
  return p;
}

fk::Tensor hash_grid_encode_device(std::shared_ptr<const HashGridPoints> points,
                                   const fk::Tensor& table, const HashGridLayout& layout,
                                   const fk::Tensor& level_weight) {
  FK_CHECK(points != nullptr, kWhere, "points on a device", "none");
  const fk::Device device = points->coords.device();
  const int levels = static_cast<int>(layout.resolution.size()), F = layout.features;
  FK_CHECK(points->coords.size(1) == layout.ndim && points->start.numel() == layout.entries + 1,
           kWhere,
           "points mapped for this layout (" + fk::to_text(layout.ndim) + "-D, " +
               fk::to_text(layout.entries) + " rows)",
           "points of another (" + fk::to_text(points->coords.size(1)) + "-D, " +
               fk::to_text(points->start.numel() - 1) + " rows)");
  FK_CHECK(table.shape() == fk::Dims({layout.entries, F}) && table.dtype() == fk::DType::F32 &&
               table.device() == device,
           kWhere,
           "an f32 table (" + fk::to_text(layout.entries) + ", " + fk::to_text(F) + ") on " +
               device.str(),
           std::string(fk::name(table.dtype())) + " " + table.shape().str() + " on " +
               table.device().str());
  FK_CHECK(level_weight.shape() == fk::Dims{levels} && level_weight.dtype() == fk::DType::F32 &&
               level_weight.device() == device && level_weight.is_contiguous(),
           kWhere, fk::to_text(levels) + " f32 level weights on " + device.str(),
           std::string(fk::name(level_weight.dtype())) + " " + level_weight.shape().str() + " on " +
               level_weight.device().str());
  fk::profile::OpScope scope("hash_grid_encode_device");
  fk::cuda::detail::DeviceGuard guard(device.index);
  const cuda::HashGridLevels L = hash_grid_levels(layout);
  const fk::Tensor t = table.detach().contiguous();
  const int64_t n = points->coords.size(0);
  fk::Tensor y = fk::empty({n, static_cast<int64_t>(levels) * F}, {fk::DType::F32, device});
  cuda::launch_hash_grid_encode(L, n, points->coords.data<float>(), t.data<float>(),
                                level_weight.data<float>(), y.data<float>(),
                                fk::cuda::current_stream(device.index));
  fk::profile::count_launch();
  fk::cuda::after_op(device.index);
  if (fk::autograd::needs_grad(table)) {
    auto node = std::make_shared<HashGridDeviceBackward>();
    node->points = std::move(points);
    node->levels = L;
    node->level_weight = level_weight;
    node->device = device;
    fk::autograd::record(node, {table}, y);
  }
  return y;
}

}  // namespace nefi
