// The NEFI_FUSED_MLP knob, the activation names and the width limits of
// fused_mlp_device.h (built with and without CUDA: the knob is listed
// everywhere); the device's own limits are fused_mlp_unsupported_on's.
#include <string>

#include "fk/error.h"
#include "fk/knobs.h"
#include "nefi/field/fused_mlp_device.h"

namespace nefi {
namespace {

fk::Knob kFusedMlp("NEFI_FUSED_MLP", fk::KnobChoices{{"auto", "1", "0"}}, "auto",
                   "nefi device NeuralField MLP: auto (one fused kernel each way where it "
                   "is the faster: hidden width <= 64 in f32; <= 32 under bf16/f16 "
                   "autocast, <= 64 on at most 16384 rows), 1 (fused wherever it can run: "
                   "widths <= 128; an error elsewhere) or 0 (one cuBLAS GEMM + one "
                   "epilogue kernel per layer)",
                   fk::KnobRead::PerCall);

enum class Mode { Off, On, Auto };

Mode mode() {
  const std::string v = kFusedMlp.as_string();
  if (v == "0") return Mode::Off;
  if (v == "1") return Mode::On;
  return Mode::Auto;
}

}  // namespace

FusedMlpActivation fused_mlp_activation(const std::string& name) {
  if (name == "tanh") return FusedMlpActivation::Tanh;
  if (name == "relu") return FusedMlpActivation::Relu;
  if (name == "gelu") return FusedMlpActivation::Gelu;
  if (name == "silu") return FusedMlpActivation::Silu;
  if (name == "softplus") return FusedMlpActivation::Softplus;
  FK_CHECK(name == "sine", "nefi::fused_mlp_activation",
           "activation tanh, relu, gelu, silu, softplus or sine", "'" + name + "'");
  return FusedMlpActivation::Sine;
}

std::string fused_mlp_unsupported(const FusedMlpSpec& spec, int64_t in, int device) {
  if (spec.autocast && *spec.autocast != fk::DType::BF16 && *spec.autocast != fk::DType::F16)
    return std::string("autocast ") + fk::name(*spec.autocast);
  if (spec.hidden > kFusedMlpMaxWidth || spec.out > kFusedMlpMaxWidth)
    return "hidden width " + std::to_string(spec.hidden) + ", output width " +
           std::to_string(spec.out);
  if (in > (int64_t{1} << 16)) return "feature width " + std::to_string(in);
  if (spec.depth > kFusedMlpMaxDepth)
    return "depth " + std::to_string(spec.depth) + " (at most " +
           std::to_string(kFusedMlpMaxDepth) + " hidden layers)";
  return fused_mlp_unsupported_on(spec, in, device);
}

int fused_mlp_auto_width(const FusedMlpSpec& spec, int64_t rows) {
  if (!spec.autocast) return kFusedMlpAutoWidth;
  return rows <= kFusedMlpAutoFewRows ? kFusedMlpAutoWidthAutocastFewRows
                                      : kFusedMlpAutoWidthAutocast;
}

bool use_fused_mlp(const FusedMlpSpec& spec, int64_t rows, int64_t in, int device) {
  const Mode m = mode();
  if (m == Mode::Off) return false;
  const std::string why = fused_mlp_unsupported(spec, in, device);
  FK_CHECK(m == Mode::Auto || why.empty(), "NEFI_FUSED_MLP=1",
           "a network the fused kernel runs (hidden and output widths <= " +
               fk::to_text(kFusedMlpMaxWidth) + ", shared memory for 32 rows)",
           why);
  return why.empty() && (m == Mode::On || spec.hidden <= fused_mlp_auto_width(spec, rows));
}

}  // namespace nefi
