// nefi bench --batch-device: a device this process cannot use (any CUDA
// device on a CPU-only build) and a malformed name are refused in one line
// naming them, before any work.
#include <gtest/gtest.h>

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

}  // namespace
