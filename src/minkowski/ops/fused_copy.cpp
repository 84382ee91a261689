#include "minkowski/ops/fused_copy.h"

#include <string>

#include "fk/knobs.h"

namespace minkowski {
namespace {

fk::Knob kFusedCopy("ME_FUSED_COPY",
                    fk::KnobChoices{{"auto", "1", "0", "true", "false", "on", "off", "yes", "no"}},
                    "auto",
                    "minkowski convolution: 1 = fused gather/GEMM/scatter over groups of offsets, "
                    "0 = per-offset copies, auto = the faster per device (fused_copy.h)",
                    fk::KnobRead::PerCall);
fk::Knob kFusedCopyMaxMb("ME_FUSED_COPY_MAX_MB", fk::KnobType::Float, "2048",
                         "minkowski convolution: cap on the fused path's staging (input + output "
                         "rows) per call, in MiB (fractions allowed; 0 means 2048); above it "
                         "offsets are processed in groups, and one over it in 2048-row pieces",
                         fk::KnobRead::PerCall, fk::KnobRange{0, 1e9});

}  // namespace

FusedCopy fused_copy_mode() {
  (void)kFusedCopyMaxMb.as_float();
  const std::string v = kFusedCopy.as_string();
  if (v == "auto") return FusedCopy::Auto;
  return v == "1" || v == "true" || v == "on" || v == "yes" ? FusedCopy::On : FusedCopy::Off;
}

double fused_copy_cap_mb() {
  return kFusedCopyMaxMb.as_float();
}

}  // namespace minkowski
