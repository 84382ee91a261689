// NEFI_FUSED_MLP and the fused MLP's activation names (fused_mlp_choice.cpp):
// the knob's values, what 1 refuses, and the names NeuralField uses. Runs in
// every build; the fused kernel itself is tested against the layer chains in
// tests/nefi/cuda/fused_mlp_device_test.cpp (on a GPU).
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>

#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/knobs.h"
#include "nefi/field/fused_mlp_device.h"

namespace {

// The rows of BM_DeviceMlp, where the widths alone decide auto.
constexpr int64_t kRows = 65536;

void expect_error_naming(const std::function<void()>& body, const std::string& text) {
  try {
    body();
    ADD_FAILURE() << "no error; expected one naming '" << text << "'";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

nefi::FusedMlpSpec spec(int hidden, std::optional<fk::DType> autocast = std::nullopt) {
  nefi::FusedMlpSpec s;
  s.hidden = hidden;
  s.depth = 3;
  s.out = 2;
  s.autocast = autocast;
  return s;
}

TEST(NefiFusedMlpChoice, KnobValues) {
  // Refused by the knob itself (so fk-info refuses it too).
  expect_error_naming([] { fk::KnobOverride bad("NEFI_FUSED_MLP", "yes"); },
                      "knob NEFI_FUSED_MLP: expected one of auto, 1 or 0, got 'yes'");
  {
    fk::KnobOverride off("NEFI_FUSED_MLP", "0");  // never, whatever the network
    EXPECT_FALSE(nefi::use_fused_mlp(spec(32), kRows, 8, 0));
    EXPECT_FALSE(nefi::use_fused_mlp(spec(32, fk::DType::BF16), kRows, 8, 0));
  }
  {
    fk::KnobOverride on("NEFI_FUSED_MLP", "1");
    // Autocast is bf16 or f16 (NeuralField refuses others before this).
    expect_error_naming([] { nefi::use_fused_mlp(spec(32, fk::DType::F64), kRows, 8, 0); },
                        "autocast f64");
    expect_error_naming([] { nefi::use_fused_mlp(spec(129, fk::DType::BF16), kRows, 8, 0); },
                        "hidden width 129");
    for (std::optional<fk::DType> ac : {std::optional<fk::DType>(), std::optional(fk::DType::BF16),
                                        std::optional(fk::DType::F16)}) {
      if (fk::cuda::device_count() == 0)
        expect_error_naming([&] { nefi::use_fused_mlp(spec(32, ac), kRows, 8, 0); },
                            "NEFI_FUSED_MLP=1");
      else
        EXPECT_TRUE(nefi::use_fused_mlp(spec(32, ac), kRows, 8, 0));
    }
  }
  // auto: the per-layer path wherever the fused kernel cannot run, and where
  // it can but is the slower (at 65536 rows, hidden width above 64 in f32,
  // above 32 under autocast: the H200's figures in fused_mlp_device.h).
  EXPECT_FALSE(nefi::use_fused_mlp(spec(129), kRows, 8, 0));
  EXPECT_FALSE(nefi::use_fused_mlp(spec(129, fk::DType::F16), kRows, 8, 0));
  EXPECT_FALSE(nefi::use_fused_mlp(spec(32, fk::DType::F64), kRows, 8, 0));
  const bool gpu = fk::cuda::device_count() > 0;
  EXPECT_EQ(nefi::use_fused_mlp(spec(64), kRows, 8, 0), gpu);
  EXPECT_FALSE(nefi::use_fused_mlp(spec(65), kRows, 8, 0));
  EXPECT_FALSE(nefi::use_fused_mlp(spec(128), kRows, 8, 0));
  for (fk::DType ac : {fk::DType::BF16, fk::DType::F16}) {
    EXPECT_EQ(nefi::use_fused_mlp(spec(32, ac), kRows, 8, 0), gpu);
    EXPECT_FALSE(nefi::use_fused_mlp(spec(33, ac), kRows, 8, 0));
    EXPECT_FALSE(nefi::use_fused_mlp(spec(128, ac), kRows, 8, 0));
  }
  if (gpu) {  // 1 still fuses where auto does not
    fk::KnobOverride on("NEFI_FUSED_MLP", "1");
    EXPECT_TRUE(nefi::use_fused_mlp(spec(128), kRows, 8, 0));
    EXPECT_TRUE(nefi::use_fused_mlp(spec(128, fk::DType::BF16), kRows, 8, 0));
  }
}

// Under autocast, fewer rows: width 64 fuses on at most 16384 rows (where the
// per-layer path's launches outweigh its faster GEMMs on the H200); f32 and
// width 128 do not depend on the rows, and nothing fuses where the kernel
// cannot run.
TEST(NefiFusedMlpChoice, AutocastFusesWidth64OnFewRows) {
  const bool gpu = fk::cuda::device_count() > 0;
  for (fk::DType ac : {fk::DType::BF16, fk::DType::F16}) {
    EXPECT_EQ(nefi::use_fused_mlp(spec(64, ac), 16384, 8, 0), gpu);
    EXPECT_FALSE(nefi::use_fused_mlp(spec(64, ac), 16385, 8, 0));
    EXPECT_FALSE(nefi::use_fused_mlp(spec(65, ac), 1, 8, 0));
    EXPECT_FALSE(nefi::use_fused_mlp(spec(128, ac), 1, 8, 0));
    EXPECT_EQ(nefi::use_fused_mlp(spec(32, ac), 262144, 8, 0), gpu);
  }
  EXPECT_EQ(nefi::use_fused_mlp(spec(64), 262144, 8, 0), gpu);
  EXPECT_FALSE(nefi::use_fused_mlp(spec(128), 1, 8, 0));
  EXPECT_FALSE(nefi::use_fused_mlp(spec(129, fk::DType::BF16), 1, 8, 0));
  fk::KnobOverride off("NEFI_FUSED_MLP", "0");
  EXPECT_FALSE(nefi::use_fused_mlp(spec(32), 1, 8, 0));
}

// The parameter gradient's launch has a grid row per layer (at most 65535):
// deeper networks are refused by name, before any device is asked, and auto
// leaves them to the per-layer path.
TEST(NefiFusedMlpChoice, DepthBeyondTheGridRowsIsRefused) {
  nefi::FusedMlpSpec deep = spec(32);
  deep.depth = nefi::kFusedMlpMaxDepth + 1;
  EXPECT_NE(nefi::fused_mlp_unsupported(deep, 8, 0).find("depth 65535"), std::string::npos)
      << nefi::fused_mlp_unsupported(deep, 8, 0);
  {
    fk::KnobOverride on("NEFI_FUSED_MLP", "1");
    expect_error_naming([&] { nefi::use_fused_mlp(deep, kRows, 8, 0); }, "depth 65535");
  }
  EXPECT_FALSE(nefi::use_fused_mlp(deep, kRows, 8, 0));
}

TEST(NefiFusedMlpChoice, ActivationNames) {
  EXPECT_EQ(nefi::fused_mlp_activation("tanh"), nefi::FusedMlpActivation::Tanh);
  EXPECT_EQ(nefi::fused_mlp_activation("relu"), nefi::FusedMlpActivation::Relu);
  EXPECT_EQ(nefi::fused_mlp_activation("gelu"), nefi::FusedMlpActivation::Gelu);
  EXPECT_EQ(nefi::fused_mlp_activation("silu"), nefi::FusedMlpActivation::Silu);
  EXPECT_EQ(nefi::fused_mlp_activation("softplus"), nefi::FusedMlpActivation::Softplus);
  EXPECT_EQ(nefi::fused_mlp_activation("sine"), nefi::FusedMlpActivation::Sine);
  expect_error_naming([] { nefi::fused_mlp_activation("swish"); }, "'swish'");
}

}  // namespace
