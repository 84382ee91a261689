// fk's device-side index checks (fk/cuda/index_errors.h). Without a GPU: each
// checked op has a record of its own, and a flagged record becomes the
// fk::Error that names the op, the index and the range, and is cleared so
// that one bad call is reported once. On a GPU (skipped without one): the
// index ops with device index tensors read nothing back inside a device step
// (FK_SYNC_DEBUG=error) and give the CPU's values; a bad index throws at the
// call by default (every op synchronizes) and at the next synchronization
// under ME_LAZY_SYNC=1, also when a destructor's wait met it first (announced
// once on stderr, left pending); the host-index forms of gather and index_add refuse it
// at the call. Captured in a CUDA graph: graph_test.cpp's
// CudaGraph.AnIndexOpIsCapturedAndABadIndexIsReportedAfterItsReplay.
#include "fk/cuda/index_errors.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fk/error.h"
#include "fk/test_util.h"

#ifdef FK_WITH_CUDA
#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/index.h"
#include "fk/ops/reduce.h"
#include "fk/sync_debug.h"
#include "parity.h"
#endif

namespace fk {
namespace {

TEST(IndexErrors, EachCheckedOpHasARecordOfItsOwn) {
  std::set<int> slots;
  for (const char* op : cuda::kIndexCheckedOps) {
    const int slot = cuda::index_record_slot(op);
    EXPECT_GE(slot, 0) << op;
    EXPECT_LT(slot, cuda::kIndexCheckedOpCount) << op;
    slots.insert(slot);
  }
  EXPECT_EQ(static_cast<int>(slots.size()), cuda::kIndexCheckedOpCount);
  EXPECT_EQ(cuda::index_record_slot("masked_select"), -1);
  EXPECT_NE(cuda::index_record_slot("index_add_"), cuda::index_record_slot("index_add"));
}

// The records of one device, as the kernels leave them (all zero: none flagged).
std::vector<int64_t> clear_records() {
  return std::vector<int64_t>(cuda::kIndexCheckedOpCount * cuda::kIndexRecordWords, 0);
}

void flag(std::vector<int64_t>& records, const char* op, int64_t value, int64_t bound) {
  int64_t* r = records.data() + cuda::index_record_slot(op) * cuda::kIndexRecordWords;
  r[cuda::kIndexRecordValue] = value;
  r[cuda::kIndexRecordBound] = bound;
  r[cuda::kIndexRecordFlag] = 1;
}

TEST(IndexErrors, NothingFlaggedIsNoError) {
  std::vector<int64_t> records = clear_records();
  EXPECT_NO_THROW(cuda::throw_if_index_flagged(records.data(), 0));
  EXPECT_EQ(records, clear_records());
}

TEST(IndexErrors, AFlaggedRecordIsAnErrorNamingTheOpIndexAndRangeReportedOnce) {
  std::vector<int64_t> records = clear_records();
  flag(records, "index_add_", 7, 5);
  std::string msg = test::error_of([&] { cuda::throw_if_index_flagged(records.data(), 2); });
  EXPECT_NE(msg.find("index_add_ (device-side index check on cuda:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("indices in [0, 5)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  EXPECT_EQ(records, clear_records());
  EXPECT_NO_THROW(cuda::throw_if_index_flagged(records.data(), 2));
  // Two ops flagged before one synchronization: one error (the first op in
  // kIndexCheckedOps order), both cleared.
  flag(records, "scatter_add", -3, 4);
  flag(records, "gather", 9, 6);
  msg = test::error_of([&] { cuda::throw_if_index_flagged(records.data(), 0); });
  EXPECT_EQ(msg.rfind("gather (", 0), 0u) << msg;
  EXPECT_NE(msg.find("index 9"), std::string::npos) << msg;
  EXPECT_EQ(records, clear_records());
}

// A destructor's synchronization (runtime.h's synchronize_in_destructor)
// cannot throw: it announces a flagged record on stderr once and leaves it
// flagged, so that the next synchronization still throws the same error.
TEST(IndexErrors, AnAnnouncedErrorStaysPendingAndIsAnnouncedOnce) {
  std::vector<int64_t> records = clear_records();
  EXPECT_EQ(cuda::announce_pending_index_error(records.data(), 0, "a destructor"), "");
  EXPECT_EQ(records, clear_records());
  flag(records, "scatter_add_", 11, 8);
  const std::string line = cuda::announce_pending_index_error(records.data(), 1, "X's destructor");
  EXPECT_EQ(line.rfind("fk: X's destructor found a device-side index error on cuda:1", 0), 0u)
      << line;
  EXPECT_NE(line.find("the next synchronization of cuda:1 throws it"), std::string::npos) << line;
  EXPECT_NE(line.find("scatter_add_ (device-side index check on cuda:1"), std::string::npos)
      << line;
  EXPECT_NE(line.find("indices in [0, 8)"), std::string::npos) << line;
  EXPECT_NE(line.find("index 11"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\n');
  // A second destructor waiting after the first announces nothing more.
  EXPECT_EQ(cuda::announce_pending_index_error(records.data(), 1, "Y's destructor"), "");
  // The record is pending still: the next synchronization throws it, with
  // the message a call that synchronized at once would have thrown.
  std::vector<int64_t> unannounced = clear_records();
  flag(unannounced, "scatter_add_", 11, 8);
  const std::string expected =
      test::error_of([&] { cuda::throw_if_index_flagged(unannounced.data(), 1); });
  EXPECT_EQ(test::error_of([&] { cuda::throw_if_index_flagged(records.data(), 1); }), expected);
  EXPECT_NE(line.find(expected), std::string::npos) << line;
  EXPECT_EQ(records, clear_records());
  // A kernel flagging another op after an announcement is announced anew
  // (the first flagged op in kIndexCheckedOps order is the one named).
  flag(records, "gather", 4, 2);
  EXPECT_FALSE(cuda::announce_pending_index_error(records.data(), 0, "Z").empty());
  flag(records, "index_select", 6, 3);
  const std::string again = cuda::announce_pending_index_error(records.data(), 0, "Z");
  EXPECT_NE(again.find("index_select (device-side"), std::string::npos) << again;
  EXPECT_NE(again.find("index 6"), std::string::npos) << again;
  EXPECT_EQ(cuda::announce_pending_index_error(records.data(), 0, "Z"), "");
}

#ifdef FK_WITH_CUDA

using cuda_parity::i64s;
using cuda_parity::kGpu;
using test::error_of;

// The four index ops with device index tensors, on device d.
std::vector<std::vector<double>> run_index_ops(Device d) {
  const Tensor t = test::random_tensor({5, 3}, DType::F64, -1, 1, 41).to(d);
  const Tensor rows = i64s({4, 0, 4, 2}, {4}).to(d);
  const Tensor row_src = test::random_tensor({4, 3}, DType::F64, -1, 1, 42).to(d);
  const Tensor cols = i64s({2, 0, 1, 1, 0, 2, 2, 2, 0, 1}, {5, 2}).to(d);
  const Tensor col_src = test::random_tensor({5, 2}, DType::F64, -1, 1, 43).to(d);
  std::vector<Tensor> outs;
  {
    const KnobOverride error("FK_SYNC_DEBUG", "error");
    const DeviceStepScope step;
    outs = {index_select(t, 0, rows), gather(t, 1, cols), scatter_add(t, 1, cols, col_src),
            index_add(t, 0, rows, row_src)};
  }
  std::vector<std::vector<double>> values;
  for (const Tensor& o : outs) values.push_back(o.to_vector<double>());
  return values;
}

TEST(IndexErrorsDevice, DeviceIndexOpsReadNothingBackAndEqualTheCpu) {
  FK_SKIP_WITHOUT_GPU();
  const std::vector<std::vector<double>> cpu = run_index_ops(kCPU);
  std::vector<std::vector<double>> gpu;
  EXPECT_EQ(error_of([&] { gpu = run_index_ops(kGpu); }), "");
  EXPECT_EQ(gpu, cpu);  // gathers move bits; the adds are deterministic in the CPU's order
}

TEST(IndexErrorsDevice, ABadDeviceIndexThrowsAtTheCallByDefault) {
  FK_SKIP_WITHOUT_GPU();
  const Tensor g = zeros({4, 3}, {DType::F32, kGpu});
  const Tensor src = ones({1, 3}, {DType::F32, kGpu});
  std::string msg = error_of([&] { index_add(g, 0, i64s({7}, {1}).to(kGpu), src); });
  EXPECT_NE(msg.find("index_add (device-side index check on cuda:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 4)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  msg = error_of([&] { gather(g, 1, i64s({0, -1, 0, 0}, {4, 1}).to(kGpu)); });
  EXPECT_NE(msg.find("gather (device-side"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index -1"), std::string::npos) << msg;
  // Reported once: the next op runs clean.
  EXPECT_EQ(add(g, 1.0).to_vector<float>(), std::vector<float>(12, 1.f));
  // The host-index forms refuse at the call, before any upload.
  msg = error_of([&] { index_add(g, 0, std::vector<int64_t>{7}, src); });
  EXPECT_NE(msg.find("index 7 at flat position 0"), std::string::npos) << msg;
  msg = error_of([&] { gather(g, 1, {0, 3, 0, 0}, Dims{4, 1}); });
  EXPECT_NE(msg.find("index 3 at flat position 1"), std::string::npos) << msg;
}

// A gather from a 4x3 device tensor of 5s whose column index at row 1 is
// `bad` (out of [0, 3)), under ME_LAZY_SYNC=1: the call throws nothing.
Tensor lazily_gather_with_bad_column(int64_t bad) {
  const Tensor g = full({4, 3}, 5.0, {DType::F32, kGpu});
  Tensor out;
  EXPECT_EQ(error_of([&] { out = gather(g, 1, i64s({0, bad, 0, 0}, {4, 1}).to(kGpu)); }), "");
  return out;
}

// The next synchronization throws that gather's error, naming the op, the
// range and `bad`, and only once: the one after it is clean.
void expect_next_synchronization_reports_gather(int64_t bad) {
  const std::string msg = error_of([] { cuda::synchronize(0); });
  EXPECT_NE(msg.find("gather (device-side index check on cuda:0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 3)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index " + std::to_string(bad)), std::string::npos) << msg;
  EXPECT_EQ(error_of([] { cuda::synchronize(0); }), "");
}

TEST(IndexErrorsDevice, UnderLazySyncABadIndexIsReportedAtTheNextSynchronization) {
  FK_SKIP_WITHOUT_GPU();
  const KnobOverride lazy("ME_LAZY_SYNC", "1");
  const Tensor out = lazily_gather_with_bad_column(3);
  expect_next_synchronization_reports_gather(3);
  // The bad position was skipped (written 0), the others gathered.
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{5, 0, 5, 5}));
}

// A destructor's wait (nefi's StepGraph and StepBlockMirror) meets an index
// error a lazily synchronized op left: it throws nothing, writes the error on
// stderr once, and the next synchronization throws it by name.
TEST(IndexErrorsDevice, ADestructorsWaitLeavesABadIndexPendingAndAnnouncesItOnce) {
  FK_SKIP_WITHOUT_GPU();
  const KnobOverride lazy("ME_LAZY_SYNC", "1");
  const Tensor out = lazily_gather_with_bad_column(7);
  ::testing::internal::CaptureStderr();
  cuda::synchronize_in_destructor(0, "the first destructor");
  cuda::synchronize_in_destructor(0, "the second destructor");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("fk: the first destructor found a device-side index error on cuda:0"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("gather (device-side index check on cuda:0"), std::string::npos) << err;
  EXPECT_NE(err.find("index 7"), std::string::npos) << err;
  EXPECT_EQ(err.find("the second destructor"), std::string::npos) << err;
  expect_next_synchronization_reports_gather(7);
  // Nothing pending: a destructor's wait writes nothing.
  ::testing::internal::CaptureStderr();
  cuda::synchronize_in_destructor(0, "a third destructor");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

#endif  // FK_WITH_CUDA

}  // namespace
}  // namespace fk
