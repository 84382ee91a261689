// FK_SYNC_DEBUG on real device tensors: inside a device step, Tensor::item,
// Tensor::to_vector and a copy to the host throw naming the op (error) or
// warn once per op and read (warn); outside a step they read as always.
// Skips without a usable device (scripts/gpu-check runs it on one). The
// marking logic is tests/fk/sync_debug_test.cpp.
#include "fk/sync_debug.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/test_util.h"
#include "parity.h"

namespace fk {
namespace {

using test::error_of;

TEST(SyncDebugDevice, ErrorModeNamesEachHostRead) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride error("FK_SYNC_DEBUG", "error");
  const Tensor t = full({1}, 2.0, {DType::F32, cuda_device(0)});
  EXPECT_EQ(t.item(), 2.0);  // no step in progress
  const DeviceStepScope step;
  EXPECT_NE(error_of([&] { t.item(); }).find("Tensor::item"), std::string::npos);
  EXPECT_NE(error_of([&] { t.to_vector<float>(); }).find("Tensor::to_vector"), std::string::npos);
  EXPECT_NE(error_of([&] { t.to(kCPU); }).find("a copy to the host"), std::string::npos);
  // Work that stays on the device is not a host read.
  EXPECT_EQ(error_of([&] { t.clone(); }), "");
}

TEST(SyncDebugDevice, WarnModeReadsAndWarnsOnce) {
  FK_SKIP_WITHOUT_GPU();
  KnobOverride warn("FK_SYNC_DEBUG", "warn");
  const Tensor t = full({1}, 5.0, {DType::F64, cuda_device(0)});
  const DeviceStepScope step;
  const int64_t before = sync_debug_warnings();
  EXPECT_EQ(t.item(), 5.0);
  // Once per op and process: this read warned unless an earlier test's did,
  // so some warning has been printed by now (a silent warn mode fails here).
  const int64_t after_first = sync_debug_warnings();
  EXPECT_LE(after_first, before + 1);
  EXPECT_GE(after_first, 1);
  EXPECT_EQ(t.item(), 5.0);
  EXPECT_EQ(sync_debug_warnings(), after_first);
  EXPECT_EQ(t.to(kCPU).to_vector<double>(), std::vector<double>({5.0}));
}

}  // namespace
}  // namespace fk
