// The CoordinateManager with coordinates that arrive on the GPU: a
// SparseTensor built from device coordinates against the same built from host
// coordinates. Its maps (downloaded) and quantization record must be the
// host's row for row; its kernel maps (submanifold, strided, transposed,
// generative transposed) the host's pair for pair, built on the device and
// used by the device ops as they are (no upload of a host map, and no
// download of their pairs until a host read); a conv + pooling +
// transposed-conv chain gives the CPU's outputs and gradients; the
// device maps are freed with the manager; features and coordinates on
// different devices are an fk::Error.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/pooling.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::random_values;
using fk::test::error_of;

constexpr double kTol = 1e-5;

// n rows of a 3-D cloud over two batches, with duplicates (a quarter of the
// rows repeat earlier ones) and negative coordinates.
fk::Tensor cloud(int64_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-9, 9), ub(0, 1);
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0 && g() % 4 == 0) {
      const int64_t j = static_cast<int64_t>(g() % static_cast<unsigned>(i));
      for (int c = 0; c < 4; ++c) rows.push_back(rows[static_cast<size_t>(j * 4 + c)]);
      continue;
    }
    rows.push_back(ub(g));
    for (int a = 0; a < 3; ++a) rows.push_back(u(g));
  }
  return fk::from_vector(rows, fk::Dims{n, 4});
}

// The same features and coordinates on the CPU and on the GPU.
struct Pair {
  SparseTensor cpu, gpu;
};
Pair build(int64_t n, int64_t c, QuantizationMode mode, unsigned seed) {
  const fk::Tensor coords = cloud(n, seed), f = random_values({n, c}, 1.0, seed + 1);
  return {SparseTensor(f, coords, {1}, mode), SparseTensor(f.to(kGpu), coords.to(kGpu), {1}, mode)};
}

void expect_same_rows(const CoordinateManager& host, const CoordinateManager& dev, const MapKey& a,
                      const MapKey& b, const std::string& what) {
  ASSERT_EQ(dev.coordinates(b).to_vector<int32_t>(), host.coordinates(a).to_vector<int32_t>())
      << what;
  auto d = dev.device_map(b);
  ASSERT_NE(d, nullptr) << what << ": no device map";
  EXPECT_EQ(d->coordinates.to_vector<int32_t>(), host.coordinates(a).to_vector<int32_t>()) << what;
}

void expect_same_pairs(const KernelMap& host, const KernelMap& dev, const std::string& what) {
  EXPECT_EQ(dev.in_size, host.in_size) << what;
  EXPECT_EQ(dev.out_size, host.out_size) << what;
  EXPECT_EQ(dev.offset_begin, host.offset_begin) << what;
  EXPECT_TRUE(
      std::equal(dev.in_rows.begin(), dev.in_rows.end(), host.in_rows.begin(), host.in_rows.end()))
      << what << ": input rows";
  EXPECT_TRUE(std::equal(dev.out_rows.begin(), dev.out_rows.end(), host.out_rows.begin(),
                         host.out_rows.end()))
      << what << ": output rows";
}

// The manager's kernel map in both managers: the same pairs, and the device
// manager's map carries the device-built map as its device copy.
void expect_kernel_maps_match(const Pair& p, const MapKey& in, const MapKey& out,
                              const KernelRegion& k, bool transpose, const std::string& what) {
  CoordinateManager& host = *p.cpu.manager();
  CoordinateManager& dev = *p.gpu.manager();
  auto hm = host.kernel_map(in, out, k, transpose);
  auto dm = dev.kernel_map(in, out, k, transpose);
  ASSERT_FALSE(hm->identity) << what;
  expect_same_pairs(*hm, *dm, what);
  auto built = dev.device_kernel_map(in, out, k, transpose);
  ASSERT_NE(built, nullptr) << what << ": not built on the device";
  EXPECT_EQ(&cuda::device_copy_of(*dm, 0), built.get()) << what << ": uploaded again";
  EXPECT_EQ(built->offset_begin, hm->offset_begin) << what;
  EXPECT_EQ(built->in_rows.to_vector<int32_t>(),
            std::vector<int32_t>(hm->in_rows.begin(), hm->in_rows.end()))
      << what;
  EXPECT_EQ(built->out_rows.to_vector<int32_t>(),
            std::vector<int32_t>(hm->out_rows.begin(), hm->out_rows.end()))
      << what;
  EXPECT_EQ(host.device_kernel_map(in, out, k, transpose), nullptr) << what;
}

TEST(MinkowskiCudaCoordinateManager, MapsAndQuantizationMatchHostCoordinates) {
  MK_SKIP_WITHOUT_GPU();
  for (QuantizationMode mode : {QuantizationMode::RandomSubsample,
                                QuantizationMode::UnweightedAverage, QuantizationMode::MaxPool}) {
    const Pair p = build(3000, 5, mode, 3);
    ASSERT_EQ(p.gpu.key(), p.cpu.key());
    ASSERT_LT(p.gpu.size(), 3000);  // duplicates were merged
    expect_same_rows(*p.cpu.manager(), *p.gpu.manager(), p.cpu.key(), p.gpu.key(), "inserted");
    EXPECT_EQ(p.gpu.unique_index(), p.cpu.unique_index());
    EXPECT_EQ(p.gpu.inverse_mapping(), p.cpu.inverse_mapping());
    ASSERT_EQ(p.gpu.F().device(), kGpu);
    expect_close(p.gpu.F(), p.cpu.F(), 1e-6, "quantized features");
    EXPECT_EQ(p.cpu.manager()->device_map(p.cpu.key()), nullptr);
  }
}

TEST(MinkowskiCudaCoordinateManager, KernelMapsMatchHostCoordinates) {
  MK_SKIP_WITHOUT_GPU();
  const Pair p = build(4000, 2, QuantizationMode::FirstOccurrence, 5);
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  const MapKey in = p.cpu.key();
  expect_kernel_maps_match(p, in, in, k3, false, "submanifold 3^3");
  const MapKey s_cpu = p.cpu.manager()->stride(in, {2}), s_gpu = p.gpu.manager()->stride(in, {2});
  ASSERT_EQ(s_gpu, s_cpu);
  expect_same_rows(*p.cpu.manager(), *p.gpu.manager(), s_cpu, s_gpu, "strided");
  expect_kernel_maps_match(p, in, s_cpu, k2, false, "strided 2^3");
  expect_kernel_maps_match(p, in, s_cpu, KernelRegion::cube({3}), false, "strided 3^3");
  expect_kernel_maps_match(p, s_cpu, in, k2, true, "transposed 2^3");
  const MapKey g_cpu = p.cpu.manager()->expand(s_cpu, k3, {1});
  const MapKey g_gpu = p.gpu.manager()->expand(s_gpu, k3, {1});
  ASSERT_EQ(g_gpu, g_cpu);
  expect_same_rows(*p.cpu.manager(), *p.gpu.manager(), g_cpu, g_gpu, "generative");
  expect_kernel_maps_match(p, s_cpu, g_cpu, k3, true, "generative transposed 3^3");
}

fk::Tensor leaf(const fk::Tensor& t) {
  fk::Tensor l = t.detach().clone();
  l.set_requires_grad(true);
  return l;
}

// conv 3^3 -> max pooling 2^3 stride 2 -> transposed conv 2^3 stride 2 (back
// onto the input's map) -> generative transposed conv 3^3 (onto new
// coordinates), with the input's features on `device`.
struct Chain {
  fk::Tensor x, w1, w2, w3, out;
};
Chain run_chain(const SparseTensor& input, const fk::Device& device) {
  Chain c;
  c.x = leaf(input.F().to(device));
  c.w1 = leaf(random_values({27, 4, 6}, 0.3, 21).to(device));
  c.w2 = leaf(random_values({8, 6, 5}, 0.3, 22).to(device));
  c.w3 = leaf(random_values({27, 5, 3}, 0.3, 23).to(device));
  const SparseTensor x(c.x, input.key(), input.manager());
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  SparseTensor y = convolution(x, c.w1, fk::Tensor(), k3);
  y = max_pooling(y, k2, {2});
  y = convolution_transpose(y, c.w2, fk::Tensor(), k2, {2});
  y = generative_convolution_transpose(y, c.w3, fk::Tensor(), k3, {1});
  c.out = y.F();
  return c;
}

TEST(MinkowskiCudaCoordinateManager, ConvPoolingChainMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  fk::amp::set_allow_tf32(false);
  const Pair p = build(2500, 4, QuantizationMode::UnweightedAverage, 9);
  const Chain cpu = run_chain(p.cpu, fk::kCPU), gpu = run_chain(p.gpu, kGpu);
  ASSERT_EQ(gpu.out.device(), kGpu);
  expect_close(gpu.out, cpu.out, kTol, "chain output");
  const fk::Tensor g = random_values(cpu.out.shape(), 1.0, 31);
  cpu.out.backward(g);
  gpu.out.backward(g.to(kGpu));
  expect_close(gpu.x.grad(), cpu.x.grad(), kTol, "grad features");
  expect_close(gpu.w1.grad(), cpu.w1.grad(), kTol, "grad conv weight");
  expect_close(gpu.w2.grad(), cpu.w2.grad(), kTol, "grad transposed conv weight");
  expect_close(gpu.w3.grad(), cpu.w3.grad(), kTol, "grad generative weight");
  // The maps the chain used were built on the device (and none is built now).
  CoordinateManager& mgr = *p.gpu.manager();
  const int64_t maps = mgr.num_kernel_maps();
  const MapKey in = p.gpu.key(), down = mgr.stride(in, {2});
  const KernelRegion k3 = KernelRegion::cube({3}), k2 = KernelRegion::cube({2});
  EXPECT_NE(mgr.device_kernel_map(in, in, k3, false), nullptr);
  EXPECT_NE(mgr.device_kernel_map(in, down, k2, false), nullptr);
  EXPECT_NE(mgr.device_kernel_map(down, in, k2, true), nullptr);
  EXPECT_EQ(mgr.num_kernel_maps(), maps);
  // Nothing in the device chain read its maps' pairs on the host: they were
  // never downloaded (pair_rows.h).
  const auto host_map = [&](const MapKey& a, const MapKey& b, const KernelRegion& k, bool t) {
    return mgr.kernel_map(a, b, k, t);
  };
  const std::vector<std::shared_ptr<const KernelMap>> used = {
      host_map(in, in, k3, false), host_map(in, down, k2, false), host_map(down, in, k2, true)};
  for (const auto& m : used) {
    EXPECT_TRUE(m->in_rows.pending() && m->out_rows.pending()) << "downloaded by the device chain";
    EXPECT_EQ(m->pair_bytes(), static_cast<int64_t>(m->offset_begin.capacity() * sizeof(int64_t)));
  }
  // CPU features on the device-built maps: the host kernel maps serve them,
  // their pairs fetched on that first host read.
  const SparseTensor host_features(p.cpu.F(), p.gpu.key(), p.gpu.manager());
  const Chain mixed = run_chain(host_features, fk::kCPU);
  expect_close(mixed.out, cpu.out, 1e-6, "CPU features on device-built maps");
  for (const auto& m : used) EXPECT_FALSE(m->in_rows.pending() || m->out_rows.pending());
}

TEST(MinkowskiCudaCoordinateManager, DeviceMapsAreFreedWithTheManager) {
  MK_SKIP_WITHOUT_GPU();
  fk::cuda::synchronize(0);
  const int64_t before = fk::cuda::pool_stats(0).allocated;
  {
    const Pair p = build(3000, 2, QuantizationMode::FirstOccurrence, 13);
    auto& mgr = *p.gpu.manager();
    mgr.kernel_map(p.gpu.key(), mgr.stride(p.gpu.key(), {2}), KernelRegion::cube({2}), true);
    EXPECT_GT(fk::cuda::pool_stats(0).allocated, before);
  }
  fk::cuda::synchronize(0);
  EXPECT_EQ(fk::cuda::pool_stats(0).allocated, before);
}

TEST(MinkowskiCudaCoordinateManager, MixedDevicesAreErrors) {
  MK_SKIP_WITHOUT_GPU();
  const fk::Tensor coords = cloud(100, 17), f = random_values({100, 3}, 1.0, 18);
  EXPECT_NE(error_of([&] { SparseTensor(f, coords.to(kGpu)); }).find("coordinates' device"),
            std::string::npos);
  // Device features over host coordinates are allowed (the maps are built on
  // the host; field_ops_dispatch_test.cpp covers them).
  EXPECT_EQ(error_of([&] { SparseTensor(f.to(kGpu), coords); }), "");
  // Device coordinates are checked as host ones: multiples of the stride.
  EXPECT_NE(error_of([&] { SparseTensor(f.to(kGpu), coords.to(kGpu), {2}); }).find("multiples"),
            std::string::npos);
  // A device map and a host map of one manager: the kernel map takes the CPU
  // path (nothing built on the device) and still matches.
  auto mgr = std::make_shared<CoordinateManager>(3);
  const SparseTensor dev(f.to(kGpu), coords.to(kGpu), {1}, QuantizationMode::FirstOccurrence, mgr);
  const SparseTensor host(f, coords, {1}, QuantizationMode::FirstOccurrence, mgr);
  auto k3 = KernelRegion::cube({3});
  auto m = mgr->kernel_map(dev.key(), host.key(), k3, false);
  EXPECT_EQ(mgr->device_kernel_map(dev.key(), host.key(), k3, false), nullptr);
  auto self = mgr->kernel_map(host.key(), host.key(), k3, false);
  expect_same_pairs(*self, *m, "device map onto a host map");
}

}  // namespace
}  // namespace minkowski
