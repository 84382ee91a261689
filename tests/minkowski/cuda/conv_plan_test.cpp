// The device convolution's host-side plan (conv_plan.h), without a device
// (minkowski_tests, every build): the dtypes it takes (f64 among them) and
// the errors that name the others, and the offset groups under the staging
// cap, counted by hand, with f64's 8-byte elements making rows twice as wide
// as f32's (half as many pairs under one cap, the same staging bytes); and
// the largest map the device's i32 pair ids hold.
#include "minkowski/cuda/conv_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"

namespace minkowski {
namespace {

using cuda::OffsetGroup;
using fk::test::error_of;

fk::Tensor zeros(fk::DType t) {
  return fk::zeros({2, 3}, {t});
}

TEST(MinkowskiCudaConvPlan, DtypesTakeF64AndNameTheExpected) {
  const char* where = "conv";
  for (fk::DType t : {fk::DType::F32, fk::DType::F16, fk::DType::BF16, fk::DType::F64}) {
    const fk::Tensor x = zeros(t);
    EXPECT_EQ(error_of([&] { cuda::check_conv_dtypes(where, x, x, &x); }), "") << fk::name(t);
  }
  const fk::Tensor f64 = zeros(fk::DType::F64), f32 = zeros(fk::DType::F32);
  const std::string i32 = error_of([&] {
    const fk::Tensor x = zeros(fk::DType::I32);
    cuda::check_conv_dtypes(where, x, x, nullptr);
  });
  EXPECT_NE(i32.find("f32, f16, bf16 or f64"), std::string::npos) << i32;
  EXPECT_NE(i32.find("i32"), std::string::npos) << i32;
  const std::string weight = error_of([&] { cuda::check_conv_dtypes(where, f64, f32, nullptr); });
  EXPECT_NE(weight.find("a weight of the features' dtype f64"), std::string::npos) << weight;
  EXPECT_NE(weight.find("f32"), std::string::npos) << weight;
  const std::string grad = error_of([&] { cuda::check_conv_dtypes(where, f64, f64, &f32); });
  EXPECT_NE(grad.find("a grad_out of the features' dtype f64"), std::string::npos) << grad;
  // An undefined grad_out (a backward without one) is not checked.
  const fk::Tensor none;
  EXPECT_EQ(error_of([&] { cuda::check_conv_dtypes(where, f64, f64, &none); }), "");
}

// A host map is uploaded only while its pair ids fit i32 (2^31 - 1 pairs
// at most); one more would wrap the ids the device's CSRs are built from.
TEST(MinkowskiCudaConvPlan, PairCountsBeyondInt32AreRefused) {
  const char* where = "minkowski::cuda::upload_kernel_map";
  EXPECT_EQ(error_of([&] { cuda::check_device_pair_count(where, 0); }), "");
  EXPECT_EQ(error_of([&] { cuda::check_device_pair_count(where, (int64_t{1} << 31) - 1); }), "");
  const std::string e = error_of([&] { cuda::check_device_pair_count(where, int64_t{1} << 31); });
  EXPECT_NE(e.find(where), std::string::npos) << e;
  EXPECT_NE(e.find("< 2^31 pairs"), std::string::npos) << e;
  EXPECT_NE(e.find("2147483648"), std::string::npos) << e;
}

// A cap whose rows exceed int64 (or infinite) holds every offset in one
// group, as a large cap should (its rows were once converted to int64 out of
// range); a negative or NaN cap is an error naming the expected range.
TEST(MinkowskiCudaConvPlan, HugeCapsAreOneGroupAndBadCapsAreErrors) {
  const std::vector<int64_t> pairs = {100, 100, 100};
  for (double cap_mb : {1e30, std::numeric_limits<double>::infinity()}) {
    const cuda::OffsetGroups r = cuda::plan_offset_groups(pairs, 4, true, cap_mb);
    EXPECT_EQ(r.groups, (std::vector<OffsetGroup>{{0, 3}})) << cap_mb;
    EXPECT_EQ(r.max_rows, 300) << cap_mb;
  }
  for (double cap_mb : {-1.0, std::nan("")}) {
    const std::string e = error_of([&] { cuda::plan_offset_groups(pairs, 4, true, cap_mb); });
    EXPECT_NE(e.find("a cap >= 0 MiB"), std::string::npos) << e;
  }
}

// 64 -> 64 channels: rows of 128 x 4 = 512 bytes in f32, 1024 in f64; a cap
// of 204800 bytes is 400 f32 rows, 200 f64 rows.
TEST(MinkowskiCudaConvPlan, EightByteRowsHalveThePairsUnderTheCap) {
  const std::vector<int64_t> pairs = {100, 100, 100, 100};
  const double cap_mb = 204800.0 / 1048576.0;
  const cuda::OffsetGroups f32 = cuda::plan_offset_groups(pairs, 128 * 4, true, cap_mb);
  EXPECT_EQ(f32.groups, (std::vector<OffsetGroup>{{0, 4}}));
  EXPECT_EQ(f32.max_rows, 400);
  EXPECT_EQ(f32.staging_bytes(128 * 4), 204800);
  const cuda::OffsetGroups f64 = cuda::plan_offset_groups(pairs, 128 * 8, true, cap_mb);
  EXPECT_EQ(f64.groups, (std::vector<OffsetGroup>{{0, 2}, {2, 4}}));
  EXPECT_EQ(f64.max_rows, 200);
  EXPECT_EQ(f64.staging_bytes(128 * 8), 204800);
}

// A cap of 200 rows below the largest offset's 300: the cap becomes 300.
TEST(MinkowskiCudaConvPlan, LargestOffsetEmptyOffsetsAndPerOffsetGroups) {
  const std::vector<int64_t> pairs = {0, 300, 50, 0, 50};
  const double cap_mb = 200.0 * 1024 / 1048576.0;
  const cuda::OffsetGroups fused = cuda::plan_offset_groups(pairs, 1024, true, cap_mb);
  // 0 + 300 fits 300; 50 + 0 + 50 = 100.
  EXPECT_EQ(fused.groups, (std::vector<OffsetGroup>{{0, 2}, {2, 5}}));
  EXPECT_EQ(fused.max_rows, 300);
  // Not fused: one group per offset with pairs.
  const cuda::OffsetGroups each = cuda::plan_offset_groups(pairs, 1024, false, cap_mb);
  EXPECT_EQ(each.groups, (std::vector<OffsetGroup>{{1, 2}, {2, 3}, {4, 5}}));
  EXPECT_EQ(each.max_rows, 300);
  // Cap 0 is 2048 MiB: one group.
  const cuda::OffsetGroups whole = cuda::plan_offset_groups(pairs, 1024, true, 0);
  EXPECT_EQ(whole.groups, (std::vector<OffsetGroup>{{0, 5}}));
  EXPECT_EQ(whole.max_rows, 400);
  // No offsets: no groups, no staging.
  EXPECT_TRUE(cuda::plan_offset_groups({}, 8, true, 0).groups.empty());
  const std::string bad = error_of([] { cuda::plan_offset_groups({1}, 0, true, 0); });
  EXPECT_NE(bad.find("row_bytes > 0"), std::string::npos) << bad;
}

// The cap's edge: rows x row_bytes equal to the cap bytes fit, one row more
// splits; a single offset (K = 1) is one group whatever the cap; an offset
// above the cap raises it for the groups after it too (the staging buffer is
// sized for the largest group anyway, so it never exceeds max(cap, largest)).
TEST(MinkowskiCudaConvPlan, TheCapsLastRowSingleOffsetsAndARaisedCap) {
  // 1 KiB rows: the cap of 300 rows is 300 / 1024 MiB, exact in binary.
  const int64_t row_bytes = 1024;
  const double cap_mb = 300.0 * row_bytes / 1048576.0;
  const cuda::OffsetGroups at = cuda::plan_offset_groups({100, 200}, row_bytes, true, cap_mb);
  EXPECT_EQ(at.groups, (std::vector<OffsetGroup>{{0, 2}}));
  EXPECT_EQ(at.max_rows, 300);
  const cuda::OffsetGroups over = cuda::plan_offset_groups({100, 201}, row_bytes, true, cap_mb);
  EXPECT_EQ(over.groups, (std::vector<OffsetGroup>{{0, 1}, {1, 2}}));
  EXPECT_EQ(over.max_rows, 201);
  // The cap in bytes one short of 300 rows: 299 rows.
  const double short_mb = (300.0 * row_bytes - 1) / 1048576.0;
  EXPECT_EQ(cuda::plan_offset_groups({100, 200}, row_bytes, true, short_mb).groups,
            (std::vector<OffsetGroup>{{0, 1}, {1, 2}}));
  for (double cap : {0.0, 1e-9, cap_mb}) {
    const cuda::OffsetGroups one = cuda::plan_offset_groups({500}, row_bytes, true, cap);
    EXPECT_EQ(one.groups, (std::vector<OffsetGroup>{{0, 1}})) << cap;
    EXPECT_EQ(one.max_rows, 500) << cap;
  }
  const cuda::OffsetGroups raised =
      cuda::plan_offset_groups({400, 150, 150, 150}, row_bytes, true, cap_mb);
  EXPECT_EQ(raised.groups, (std::vector<OffsetGroup>{{0, 1}, {1, 3}, {3, 4}}));
  EXPECT_EQ(raised.max_rows, 400);
  EXPECT_EQ(raised.staging_bytes(row_bytes), 400 * row_bytes);
}

}  // namespace
}  // namespace minkowski
