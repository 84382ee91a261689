// nefi run --device: a device this process cannot use (any CUDA device on a
// CPU-only build) and a malformed name are refused in one line naming them,
// before any work.
#include <gtest/gtest.h>

#include <string>

#include "fk/cuda/runtime.h"
#include "nefi/cli/cli_output.h"
#include "nefi/test_files.h"

namespace {

TEST(RunDeviceCli, UnusableOrMalformedDevicesAreRefusedInOneLine) {
  if (!nefi::test::nefi_built()) GTEST_SKIP() << "nefi_cli not built";
  const std::string missing = "cuda:" + std::to_string(fk::cuda::device_count());
  std::vector<std::pair<std::string, std::string>> cases = {
      {"run toy1d --smoke --no-plot --device " + missing, missing},
      {"run toy1d --smoke --no-plot --device tpu", "'tpu'"},
      {"profile toy1d --steps 2 --warmup 0 --device " + missing, missing},
      {"profile toy1d --steps 2 --warmup 0 --device tpu", "'tpu'"},
      // named by the option given, not the --set it becomes
      {"profile toy1d --steps 2 --warmup 0 --device gpu", "--device: expected cpu or cuda[:N]"}};
  if (!fk::cuda::built_with_cuda()) {
    cases.push_back({"run toy1d --smoke --no-plot --device cuda", "cuda:0"});
    cases.push_back({"profile toy1d --steps 2 --warmup 0 --device cuda", "cuda:0"});
  }
  nefi::test::expect_one_line_errors(cases, nefi::test::scratch());
}

}  // namespace
