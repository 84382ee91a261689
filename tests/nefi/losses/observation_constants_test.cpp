// ObservationConstants: made once per (data, mask, dtype, device), handed
// back unchanged after; made anew after an in-place change of the data or
// the mask, for another dtype, mask or observation; the oldest entry dropped
// beyond kMaxEntries, but none while a CUDA graph may hold their addresses;
// none kept that was made while a capture ran on its device; made without
// autograd.
#include "nefi/losses/observation_constants.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"

namespace {

using nefi::ObservationConstants;

// The constant sum(data * mask) in dt (mask optional).
ObservationConstants::Make summed(const fk::Tensor& data, const fk::Tensor& mask, fk::DType dt) {
  return [=] {
    fk::Tensor t = data.to(dt);
    if (mask.defined()) t = fk::mul(t, mask.to(dt));
    return std::vector<fk::Tensor>{fk::sum(t)};
  };
}

TEST(NefiObservationConstants, MadeOncePerObservationDtypeAndMask) {
  const ObservationConstants k;
  fk::Tensor y = fk::from_vector(std::vector<double>{1, 2, 3, 4}, fk::Dims{4});
  fk::Tensor w = fk::from_vector(std::vector<double>{1, 0, 1, 0}, fk::Dims{4});
  const fk::DType f64 = fk::DType::F64, f32 = fk::DType::F32;
  auto get = [&](const fk::Tensor& data, const fk::Tensor& mask, fk::DType dt) {
    return k.get(data, mask, dt, fk::kCPU, summed(data, mask, dt))[0];
  };
  const fk::Tensor first = get(y, {}, f64);
  EXPECT_EQ(first.item(), 10.0);
  EXPECT_TRUE(get(y, {}, f64).is_same(first));  // the same tensor handed back
  EXPECT_EQ(k.makes(), 1);
  EXPECT_EQ(get(y, w, f64).item(), 4.0);
  EXPECT_EQ(get(y, {}, f32).dtype(), f32);
  EXPECT_EQ(k.makes(), 3);
  // Another handle on the same elements is the same observation; a copy is not.
  EXPECT_TRUE(get(y.detach(), {}, f64).is_same(first));
  EXPECT_EQ(k.makes(), 3);
  EXPECT_EQ(get(y.clone(), {}, f64).item(), 10.0);
  EXPECT_EQ(k.makes(), 4);
  // In place: the data, then the mask.
  y.copy_(fk::from_vector(std::vector<double>{2, 2, 2, 2}, fk::Dims{4}));
  EXPECT_EQ(get(y, {}, f64).item(), 8.0);
  w.copy_(fk::from_vector(std::vector<double>{1, 1, 1, 0}, fk::Dims{4}));
  EXPECT_EQ(get(y, w, f64).item(), 6.0);
  EXPECT_EQ(k.makes(), 6);
}

TEST(NefiObservationConstants, KeepsTheMostRecentEntries) {
  const ObservationConstants k;
  std::vector<fk::Tensor> ys;
  for (size_t i = 0; i <= ObservationConstants::kMaxEntries; ++i)
    ys.push_back(fk::full(fk::Dims{3}, static_cast<double>(i), {fk::DType::F64}));
  auto get = [&](size_t i) {
    return k.get(ys[i], {}, fk::DType::F64, fk::kCPU, summed(ys[i], {}, fk::DType::F64))[0];
  };
  for (size_t i = 0; i < ys.size(); ++i) get(i);
  const int64_t made = k.makes();
  EXPECT_EQ(made, static_cast<int64_t>(ys.size()));
  get(ys.size() - 1);  // kept
  EXPECT_EQ(k.makes(), made);
  EXPECT_EQ(get(0).item(), 0.0);  // dropped, made again
  EXPECT_EQ(k.makes(), made + 1);
}

// A captured step bakes the constants' addresses in: while a graph is alive
// none is dropped (the same storage handed back), and once none is alive
// the next new observation trims the cache back to kMaxEntries.
TEST(NefiObservationConstants, KeepsEveryEntryWhileAGraphIsAlive) {
  bool alive = true;
  const ObservationConstants k([&alive] { return alive; });
  std::vector<fk::Tensor> ys;
  for (size_t i = 0; i < 3 * ObservationConstants::kMaxEntries; ++i)
    ys.push_back(fk::full(fk::Dims{2}, static_cast<double>(i), {fk::DType::F64}));
  auto get = [&](const fk::Tensor& y) {
    return k.get(y, {}, fk::DType::F64, fk::kCPU, summed(y, {}, fk::DType::F64))[0];
  };
  const void* const first = get(ys[0]).data_ptr();
  for (size_t i = 1; i < ys.size(); ++i) get(ys[i]);
  EXPECT_EQ(k.size(), ys.size());
  EXPECT_EQ(k.makes(), static_cast<int64_t>(ys.size()));
  EXPECT_EQ(get(ys[0]).data_ptr(), first);  // kept, not made again
  EXPECT_EQ(k.makes(), static_cast<int64_t>(ys.size()));
  alive = false;
  get(fk::full(fk::Dims{2}, -1.0, {fk::DType::F64}));
  EXPECT_EQ(k.size(), ObservationConstants::kMaxEntries);
  EXPECT_EQ(get(ys[0]).item(), 0.0);  // dropped, made again
  EXPECT_EQ(k.makes(), static_cast<int64_t>(ys.size()) + 2);
}

// Constants made while a capture runs on their device are its graph memory,
// real only if its graph runs (a failed capture never makes them real): they
// are handed back and not kept, and the first call after the capture makes
// the entry that stays. An entry made before the capture is handed back in
// it; a capture on another device changes nothing.
TEST(NefiObservationConstants, NotKeptWhenMadeWhileACaptureRuns) {
  std::optional<fk::Device> capture_on;
  const ObservationConstants k([] { return true; },
                               [&capture_on](fk::Device d) { return capture_on == d; });
  const fk::Tensor y0 = fk::full(fk::Dims{3}, 1.0, {fk::DType::F64});
  const fk::Tensor y1 = fk::full(fk::Dims{3}, 2.0, {fk::DType::F64});
  auto get = [&](const fk::Tensor& y) {
    return k.get(y, {}, fk::DType::F64, fk::kCPU, summed(y, {}, fk::DType::F64))[0];
  };
  const fk::Tensor before = get(y0);
  capture_on = fk::kCPU;
  EXPECT_TRUE(get(y0).is_same(before));
  const fk::Tensor a = get(y1), b = get(y1);
  EXPECT_EQ(a.item(), 6.0);
  EXPECT_EQ(b.item(), 6.0);
  EXPECT_FALSE(a.is_same(b));  // made twice, kept neither time
  EXPECT_EQ(k.makes(), 3);
  EXPECT_EQ(k.size(), 1u);
  capture_on = fk::cuda_device(0);
  const fk::Tensor kept = get(y1);
  EXPECT_TRUE(get(y1).is_same(kept));
  EXPECT_EQ(k.makes(), 4);
  EXPECT_EQ(k.size(), 2u);
}

TEST(NefiObservationConstants, MadeWithoutAutograd) {
  const ObservationConstants k;
  fk::Tensor y = fk::ones(fk::Dims{3}, {fk::DType::F64});
  y.set_requires_grad(true);
  const fk::Tensor s = k.get(y, {}, fk::DType::F64, fk::kCPU, summed(y, {}, fk::DType::F64))[0];
  EXPECT_FALSE(s.requires_grad());
}

}  // namespace
