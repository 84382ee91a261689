// DeviceCopies (nefi/operators/table_cache.h) on the host: one copy per
// dtype, made once and reused (the same storage on every call), its values
// the host constant's converted; the constant itself where nothing changes.
// The device copies, and a capture through operators that use them, are
// tests/nefi/cuda/prepare_tables_device_test.cpp. HostValueCopies: one
// tensor per set of values (a loss's per-row scales), made once and reused,
// the oldest dropped past kMaxEntries, but none while a CUDA graph may hold
// their addresses (the device side: tests/nefi/cuda/sync_free_steps_device_test.cpp).
// TableCache keeps nothing made while a capture runs on its device
// (device_cache_policy.h).
#include "nefi/operators/table_cache.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "fk/cuda/graph.h"
#include "fk/factory.h"

namespace {

TEST(NefiDeviceCopies, OneCopyPerDtypeMadeOnce) {
  const std::vector<double> values{0.1, 2.5, -3.0, 1e-3};
  const fk::Tensor host = fk::from_vector(values, {2, 2});
  nefi::DeviceCopies copies;
  EXPECT_TRUE(copies.get(host, fk::DType::F64, fk::kCPU).is_same(host));  // nothing to make
  EXPECT_EQ(copies.size(), 0u);
  const fk::Tensor a = copies.get(host, fk::DType::F32, fk::kCPU);
  const fk::Tensor b = copies.get(host, fk::DType::F32, fk::kCPU);
  EXPECT_EQ(copies.size(), 1u);
  EXPECT_EQ(a.dtype(), fk::DType::F32);
  EXPECT_EQ(a.shape(), host.shape());
  EXPECT_EQ(a.data_ptr(), b.data_ptr());
  const std::vector<float> got = a.to_vector<float>();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(got[i], static_cast<float>(values[i]));
}

TEST(NefiHostValueCopies, OneTensorPerValuesMadeOnce) {
  const std::vector<double> scales{0.25, 4.0, 1e-3};
  nefi::HostValueCopies copies;
  const fk::Tensor a = copies.get(scales, fk::kCPU);
  const fk::Tensor b = copies.get(scales, fk::kCPU);
  EXPECT_EQ(copies.size(), 1u);
  EXPECT_EQ(a.data_ptr(), b.data_ptr());
  EXPECT_EQ(a.dtype(), fk::DType::F64);
  EXPECT_EQ(a.shape(), fk::Dims{3});
  EXPECT_EQ(a.to_vector<double>(), scales);
  // Other values are another tensor; the first stays kept.
  const fk::Tensor c = copies.get({0.25, 4.0, 2e-3}, fk::kCPU);
  EXPECT_NE(c.data_ptr(), a.data_ptr());
  EXPECT_EQ(copies.get(scales, fk::kCPU).data_ptr(), a.data_ptr());
  EXPECT_EQ(copies.size(), 2u);
  // Past kMaxEntries the oldest is made anew.
  for (size_t i = 0; i < nefi::HostValueCopies::kMaxEntries; ++i)
    copies.get({static_cast<double>(i)}, fk::kCPU);
  EXPECT_EQ(copies.size(), nefi::HostValueCopies::kMaxEntries);
  EXPECT_NE(copies.get(scales, fk::kCPU).data_ptr(), a.data_ptr());
}

// A captured step bakes a copy's address in: while a graph is alive no copy
// is dropped (its memory stays the one the graph reads), and the first new
// values made once none is alive trim the cache back to kMaxEntries.
TEST(NefiHostValueCopies, KeepsEveryCopyWhileAGraphIsAlive) {
  bool alive = true;
  nefi::HostValueCopies copies([&alive] { return alive; });
  const std::vector<double> first{0.5, 2.0};
  const fk::Tensor a = copies.get(first, fk::kCPU);
  const void* const a_ptr = a.data_ptr();
  const size_t made = 3 * nefi::HostValueCopies::kMaxEntries;
  for (size_t i = 0; i < made; ++i) copies.get({static_cast<double>(i), 1.0}, fk::kCPU);
  EXPECT_EQ(copies.size(), made + 1);
  EXPECT_EQ(copies.get(first, fk::kCPU).data_ptr(), a_ptr);  // the graph's copy, not made anew
  alive = false;
  copies.get({-1.0}, fk::kCPU);
  EXPECT_EQ(copies.size(), nefi::HostValueCopies::kMaxEntries);
  EXPECT_NE(copies.get(first, fk::kCPU).data_ptr(), a_ptr);  // dropped, made again
}

// Without a device no graph exists, so the default policy may drop.
TEST(NefiHostValueCopies, NoGraphIsAliveWithoutACapture) {
  EXPECT_EQ(fk::cuda::live_graphs(), 0);
  EXPECT_FALSE(nefi::any_live_graph());
}

// A table made while a capture runs on its device is that capture's graph
// memory, real only if its graph runs: handed out and not kept, and made (and
// kept) by the first call after the capture. A table made before the capture
// is handed back in it; a capture on another device changes nothing.
TEST(NefiTableCache, NotKeptWhenMadeWhileACaptureRuns) {
  std::optional<fk::Device> capture_on;
  nefi::TableCache<fk::Tensor> cache([&capture_on](fk::Device d) { return capture_on == d; });
  int makes = 0;
  auto get = [&](fk::DType dtype) {
    return cache.get(fk::kCPU, dtype, [&makes](fk::Device d, fk::DType t) {
      ++makes;
      return fk::full(fk::Dims{2}, 1.5, {t, d});
    });
  };
  const fk::Tensor before = get(fk::DType::F64);
  capture_on = fk::kCPU;
  EXPECT_TRUE(get(fk::DType::F64).is_same(before));
  const fk::Tensor a = get(fk::DType::F32), b = get(fk::DType::F32);
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{1.5f, 1.5f}));
  EXPECT_FALSE(a.is_same(b));  // made twice, kept neither time
  EXPECT_EQ(makes, 3);
  EXPECT_EQ(cache.size(), 1u);
  capture_on = fk::cuda_device(0);
  const fk::Tensor kept = get(fk::DType::F32);
  EXPECT_TRUE(get(fk::DType::F32).is_same(kept));
  EXPECT_EQ(makes, 4);
  EXPECT_EQ(cache.size(), 2u);
}

// Without a device no capture runs, so the default policy keeps what it makes.
TEST(NefiTableCache, NoCaptureRunsWithoutADevice) {
  EXPECT_FALSE(nefi::capture_running(fk::kCPU));
  EXPECT_FALSE(nefi::capture_running(fk::cuda_device(0)));
}

}  // namespace
