// nefi bench --batch-device: a device this process cannot use (any CUDA
// device on a CPU-only build) and a malformed name are refused in one line
// naming them, before any work, and so is a CUDA batch device without
// --batched; a CUDA batch device is written into the protocol
// (benchmark.json, the hash), the CPU is not.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/cuda/runtime.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

TEST(BenchDeviceCli, UnusableOrMalformedBatchDevicesAreRefusedInOneLine) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const std::string missing = "cuda:" + std::to_string(fk::cuda::device_count());
  const std::string bench = "bench toy1d --smoke --batched --n 1 --seeds 0 --batch-device ";
  std::vector<std::pair<std::string, std::string>> cases = {{bench + missing, missing},
                                                            {bench + "tpu", "'tpu'"}};
  if (!fk::cuda::built_with_cuda())
    cases.push_back({bench + "cuda", "cpu (this build has no CUDA backend)"});
  nefi::test::expect_one_line_errors(cases, nefi::test::scratch());
}

// A CUDA batch device without --batched: the protocol trains no batches there
// (its hash says cpu), so the runs would be the sequential CPU ones under a
// device request. Refused in one line naming both, before the device is
// even checked (so alike with or without a GPU).
TEST(BenchDeviceCli, ABatchDeviceWithoutBatchesIsRefusedInOneLine) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  nefi::test::expect_one_line_errors(
      {{"bench toy1d --smoke --n 1 --seeds 0 --batch-device cuda:0",
        "--batch-device: expected the protocol's batch device, cpu (no device batches), got "
        "cuda:0 without --batched"},
       // a batch size without batches was dropped without a word
       {"bench toy1d --smoke --n 1 --seeds 0 --batch-size 4",
        "--batch-size: expected --batched with it"}},
      nefi::test::scratch());
}

// The protocol of a one-run toy1d campaign batched on `device`.
nlohmann::json batched_protocol(const std::string& device) {
  const std::filesystem::path out = nefi::test::fresh_dir("bench_device_cli_" + device);
  const auto r = nefi::test::nefi_stdout(
      "bench toy1d --smoke --smoke-steps 4 --batched --classes bumps --n 1 --seeds 0 -m grid "
      "--batch-device " +
      device + " -o " + out.string());
  EXPECT_EQ(r.status, 0) << r.out;
  return nlohmann::json::parse(nefi::test::slurp(out / "benchmark.json"))["protocol"];
}

TEST(BenchDeviceCli, ACudaBatchDeviceIsInTheProtocolTheCpuIsNot) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  EXPECT_FALSE(batched_protocol("cpu").contains("batch_device"));
  if (fk::cuda::device_count() == 0)
    GTEST_SKIP() << "no usable CUDA device: " << ::fk::cuda::no_device_reason();
  EXPECT_EQ(batched_protocol("cuda").value("batch_device", ""), "cuda:0");
}

}  // namespace
