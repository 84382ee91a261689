// DeviceCopies (nefi/operators/table_cache.h) on the host: one copy per
// dtype, made once and reused (the same storage on every call), its values
// the host constant's converted; the constant itself where nothing changes.
// The device copies, and a capture through operators that use them, are
// tests/nefi/cuda/prepare_tables_device_test.cpp.
#include "nefi/operators/table_cache.h"

#include <gtest/gtest.h>

#include <vector>

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

}  // namespace
