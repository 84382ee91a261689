// The fused device MLP (nefi/field/fused_mlp_device.h) against two
// independent computations of the same network: a plain layer-by-layer chain
// of fk ops in f64 on the CPU (nefi::dense + fk activations, every parameter
// its own leaf) and the same chain in f32 on the device (the per-layer cuBLAS
// path, dense_device). Output, dL/dfeatures and dL/dparams, for widths 16,
// 32, 64 and 128, with and without the skip, every activation, row counts
// that are not a multiple of the 64- or 32-row tile, and enough rows for
// several gradient chunks. Then NeuralField on the device with
// NEFI_FUSED_MLP=1 against =0 and against the CPU field, and the refusals
// (the knob's own: tests/nefi/field/fused_mlp_choice_test.cpp). Without a
// usable device the tests skip (scripts/gpu-check runs them on one).
// Autocast (bf16, f16): the fused kernel against the per-layer cuBLAS path
// at the same precision (dense_device, the same rounding points:
// nefi/cuda/fused_mlp_cells.h) and against f64 with the half type's
// tolerance; NeuralField's fused autocast path against its per-layer one and
// its CPU autocast path. The kernels' half arithmetic is also emulated on
// the host: tests/nefi/field/fused_mlp_cells_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "fk/amp.h"
#include "fk/autograd.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/domain.h"
#include "nefi/field/dense.h"
#include "nefi/field/dense_device.h"
#include "nefi/field/fused_mlp_device.h"
#include "nefi/field/fused_mlp_reference.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"

namespace {

using nefi::cuda_test::expect_close;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::KnobOverride;
using nefi::cuda_test::NoTf32;
using nefi::fused_mlp_test::MlpLayer;
using nefi::fused_mlp_test::random_mlp_params;

constexpr double kW0 = 30.0;
constexpr double kU = 0x1p-24;  // f32 unit round-off
constexpr double kU16 = 0x1p-11, kUBf16 = 0x1p-8;

struct Net {
  nefi::FusedMlpSpec spec;
  std::string activation;
  int64_t in = 0;
  int skip() const { return spec.skip_at > 0 && spec.skip_at < spec.depth ? spec.skip_at : -1; }
  int rows(int l) const { return l == spec.depth ? spec.out : spec.hidden; }
  int64_t fan_in(int l) const { return l == 0 ? in : l == skip() ? spec.hidden + in : spec.hidden; }
  int64_t numel() const {
    int64_t n = 0;
    for (int l = 0; l <= spec.depth; ++l) n += rows(l) * (fan_in(l) + 1);
    return n;
  }
};

Net make_net(int hidden, bool skip, const std::string& activation, int64_t in) {
  Net net;
  net.spec.hidden = hidden;
  net.spec.depth = 3;
  net.spec.out = 3;
  net.spec.skip_at = skip ? 2 : -1;
  net.spec.activation = nefi::fused_mlp_activation(activation);
  net.spec.sine_w0 = kW0;
  net.activation = activation;
  net.in = in;
  return net;
}

// Net's layers in the flat parameters' order.
std::vector<MlpLayer> layers_of(const Net& net) {
  std::vector<MlpLayer> layers;
  for (int l = 0; l <= net.spec.depth; ++l) layers.push_back({net.rows(l), net.fan_in(l)});
  return layers;
}

// Flat parameters as NeuralField draws them (random_mlp_params).
std::vector<double> random_params(const Net& net, uint64_t seed) {
  fk::Generator gen(seed);
  const std::vector<float> p =
      random_mlp_params(layers_of(net), net.activation == "sine", kW0, gen);
  return {p.begin(), p.end()};
}

fk::Tensor activate(const std::string& a, const fk::Tensor& z) {
  if (a == "tanh") return fk::tanh(z);
  if (a == "relu") return fk::relu(z);
  if (a == "gelu") return fk::gelu(z);
  if (a == "silu") return fk::silu(z);
  if (a == "softplus") return fk::softplus(z);
  return fk::sin(fk::mul(z, kW0));
}

using Result = nefi::fused_mlp_test::MlpResult;

// sum(y * r)'s gradients, r (N, out) fixed weights.
fk::Tensor loss_weights(int64_t n, int out) {
  fk::Generator gen(17);
  return fk::uniform({n, out}, -1.0, 1.0, {fk::DType::F32}, &gen);
}

// The network written out layer by layer with fk ops (nefi::dense: the CPU
// GEMM in f64, dense_device's cuBLAS GEMM in f32 on a device), each weight
// and bias its own leaf; the flat gradient assembled from theirs. precision
// bf16 / f16 (on a device): the hidden layers as dense_device at it, the head
// f32 (NeuralField's device autocast).
Result chain(const Net& net, const fk::Tensor& x_host, const std::vector<double>& params,
             fk::DType dt, fk::Device dev,
             nefi::DevicePrecision precision = nefi::DevicePrecision::F32) {
  const fk::Tensor r = loss_weights(x_host.size(0), net.spec.out).to(dt).to(dev);
  return nefi::fused_mlp_test::layer_chain(
      layers_of(net), net.skip(), x_host.to(dt).to(dev), params, r,
      [&](int, const fk::Tensor& h, const fk::Tensor& w, const fk::Tensor& b) {
        return activate(net.activation,
                        precision == nefi::DevicePrecision::F32
                            ? nefi::dense(h, w, b, nefi::DenseActivation::None)
                            : nefi::dense_device(h, w, b, nefi::DeviceActivation::None, precision));
      });
}

Result fused(const Net& net, const fk::Tensor& x_host, const std::vector<double>& params) {
  fk::Tensor x = x_host.to(kGpu);
  fk::Tensor p = fk::from_vector(params, fk::Dims{net.numel()}).to(fk::DType::F32).to(kGpu);
  x.set_requires_grad(true);
  p.set_requires_grad(true);
  const fk::Tensor y = nefi::fused_mlp_device(x, p, net.spec);
  EXPECT_EQ(y.device(), kGpu);
  const fk::Tensor r = loss_weights(x.size(0), net.spec.out).to(kGpu);
  fk::sum(fk::mul(y, r)).backward();
  return {y.to_vector<double>(), x.grad().to_vector<double>(), p.grad().to_vector<double>()};
}

// f32 round-off of the network relative to its largest value: a product of
// K terms is off by at most ~K u of the sum of its magnitudes, once per layer
// (depth + 1 of them), each layer passing earlier errors on at a gain near 1
// (Xavier / SIREN scaling); sine multiplies every angle's error by w0. The
// factor 4 covers the backward's second product per layer and the sums
// being of magnitudes rather than values.
double tolerance(const Net& net) {
  const double width = static_cast<double>(net.spec.hidden + net.in);
  return 4 * kU * (net.spec.depth + 1) * width * (net.activation == "sine" ? kW0 : 1);
}

// Under autocast (unit round-off u of bf16 or f16): rounding an operand moves
// it by at most u of itself at random sign, so each layer's sums move by
// about u of their size and the layers add up: 2 u (depth + 1) is what the
// host emulation of these kernels meets against f64 with a margin of 2
// (tests/nefi/field/fused_mlp_cells_test.cpp); 3 leaves room for cuBLAS's
// sums in another order. Relu's gradients are compared for y only: a z
// within rounding of 0 flips its derivative, and the two device paths round
// a few operands to neighbouring half values (their f32 sums differ).
double half_tolerance(const Net& net, double u) {
  return 3 * u * (net.spec.depth + 1);
}

std::string case_name(const Net& net, int64_t n) {
  return net.activation + " hidden " + std::to_string(net.spec.hidden) +
         (net.skip() > 0 ? " skip" : " no-skip") + " rows " + std::to_string(n);
}

void expect_matches_the_chains(const Net& net, int64_t n) {
  const std::string what = case_name(net, n);
  fk::Generator gen(static_cast<uint64_t>(n) + net.spec.hidden);
  const fk::Tensor x = fk::uniform({n, net.in}, -1.0, 1.0, {fk::DType::F32}, &gen);
  const std::vector<double> params = random_params(net, 7);
  const Result want = chain(net, x, params, fk::DType::F64, fk::kCPU);
  const Result layers = chain(net, x, params, fk::DType::F32, kGpu);
  const Result got = fused(net, x, params);
  const double tol = tolerance(net);
  for (const auto& [name, side] : {std::pair<const char*, const Result*>{"fused", &got},
                                   std::pair<const char*, const Result*>{"per-layer", &layers}}) {
    expect_close(side->y, want.y, tol, what + " " + name + " y");
    expect_close(side->dx, want.dx, tol, what + " " + name + " dx");
    expect_close(side->dp, want.dp, tol, what + " " + name + " dparams");
  }
  expect_close(got.y, layers.y, 2 * tol, what + " fused vs per-layer y");
  expect_close(got.dp, layers.dp, 2 * tol, what + " fused vs per-layer dparams");
}

// 333 rows: five 64-row tiles and a ragged one; 13 features: not a multiple
// of 4 (the kernels pad widths to 4).
TEST(NefiFusedMlp, MatchesTheLayerChainsAtEveryWidth) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (int hidden : {16, 32, 64, 128})
    for (bool skip : {false, true})
      for (const char* a : {"tanh", "relu", "sine"})
        expect_matches_the_chains(make_net(hidden, skip, a, 13), 333);
}

TEST(NefiFusedMlp, MatchesTheLayerChainsForEveryActivation) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (const char* a : {"tanh", "relu", "gelu", "silu", "softplus", "sine"})
    for (bool skip : {false, true}) expect_matches_the_chains(make_net(40, skip, a, 18), 97);
}

// 4099 rows: three gradient chunks of 2048 rows (the last of 3), summed in
// order; 50 features: a 2-D field's 12 octaves; a width off the powers of 2.
TEST(NefiFusedMlp, ManyRowsAndOddWidths) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  expect_matches_the_chains(make_net(128, true, "tanh", 50), 4099);
  expect_matches_the_chains(make_net(50, true, "silu", 75), 4099);
  expect_matches_the_chains(make_net(7, false, "relu", 3), 31);
}

// Two fused passes over 5001 rows give the same bits.
void expect_fused_repeats(const Net& net) {
  fk::Generator gen(2);
  const fk::Tensor x = fk::uniform({5001, net.in}, -1.0, 1.0, {fk::DType::F32}, &gen);
  const std::vector<double> params = random_params(net, 3);
  const Result a = fused(net, x, params), b = fused(net, x, params);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dp, b.dp);
}

TEST(NefiFusedMlp, BackwardIsBitwiseReproducible) {
  NEFI_SKIP_WITHOUT_GPU();
  expect_fused_repeats(make_net(64, true, "sine", 50));
}

nefi::NeuralField make_field(int hidden, bool skip, const std::string& activation, int ndim,
                             std::optional<fk::DType> autocast = std::nullopt) {
  nefi::NeuralFieldConfig cfg;
  cfg.autocast = autocast;
  cfg.hidden = hidden;
  cfg.depth = 3;
  cfg.skip_at = skip ? 2 : -1;
  cfg.activation = activation;
  cfg.n_octaves = 4;
  return nefi::NeuralField(ndim, {nefi::softplus_head("a", 0.3), nefi::identity_head("b", 0.1)},
                           cfg, 11);
}

// raw and the flat parameter gradient of sum(raw * r).
Result evaluate(nefi::NeuralField& f, const nefi::Domain& d) {
  const fk::Tensor r = loss_weights(d.numel(), 2);
  f.params().flat().set_grad(fk::Tensor());
  const fk::Tensor raw = f.raw(d, 0.7);
  fk::sum(fk::mul(raw, r.to(raw.device()))).backward();
  return {raw.to_vector<double>(), {}, f.params().flat().grad().to_vector<double>()};
}

// The field's two device paths and its CPU path on 13 x 11 = 143 and
// 7 x 5 x 3 = 105 cells (neither a multiple of the tile).
TEST(NefiFusedMlp, NeuralFieldFusedMatchesPerLayerAndCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (int hidden : {16, 32, 64, 128})
    for (bool skip : {false, true})
      for (int ndim : {2, 3}) {
        const char* a = hidden == 64 ? "gelu" : "tanh";
        const nefi::Domain d = ndim == 2 ? nefi::Domain({13, 11}) : nefi::Domain({7, 5, 3});
        nefi::NeuralField cpu = make_field(hidden, skip, a, ndim),
                          gpu = make_field(hidden, skip, a, ndim);
        gpu.to(kGpu);
        const Result want = evaluate(cpu, d);
        Result per_layer, fused_path;
        {
          KnobOverride off("NEFI_FUSED_MLP", "0");
          per_layer = evaluate(gpu, d);
        }
        {
          KnobOverride on("NEFI_FUSED_MLP",
                          "1");  // an error, not a silent fallback, if it cannot run
          fused_path = evaluate(gpu, d);
        }
        Net net = make_net(hidden, skip, a, ndim * 9);
        const std::string what = case_name(net, d.numel()) + " " + std::to_string(ndim) + "-D";
        const double tol = tolerance(net);
        expect_close(fused_path.y, want.y, tol, what + " fused raw");
        expect_close(fused_path.dp, want.dp, tol, what + " fused gradient");
        expect_close(fused_path.y, per_layer.y, tol, what + " fused vs per-layer raw");
        expect_close(fused_path.dp, per_layer.dp, tol, what + " fused vs per-layer gradient");
      }
}

// Once the encoding's features are cached (progress 1: no gate multiply), a
// device field's raw() is the fused op alone: one kernel launch.
TEST(NefiFusedMlp, FieldForwardIsOneLaunch) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::NeuralField f = make_field(64, true, "tanh", 2);
  f.to(kGpu);
  const nefi::Domain d({13, 11});
  KnobOverride on("NEFI_FUSED_MLP", "1");
  fk::autograd::NoGradGuard ng;
  f.raw(d, 1.0);
  const int64_t before = fk::profile::counters().launches;
  const fk::Tensor raw = f.raw(d, 1.0);
  EXPECT_EQ(fk::profile::counters().launches - before, 1);
  EXPECT_EQ(raw.shape(), fk::Dims({d.numel(), 2}));
}

nefi::DevicePrecision precision_of(fk::DType autocast) {
  return autocast == fk::DType::BF16 ? nefi::DevicePrecision::Bf16 : nefi::DevicePrecision::F16;
}

double unit_roundoff(fk::DType autocast) {
  return autocast == fk::DType::BF16 ? kUBf16 : kU16;
}

// The fused kernel under autocast against the per-layer cuBLAS path at the
// same precision and against f64: output, dL/dfeatures, dL/dparams.
void expect_autocast_matches(Net net, fk::DType autocast, int64_t n) {
  net.spec.autocast = autocast;
  const std::string what = std::string(fk::name(autocast)) + " " + case_name(net, n);
  fk::Generator gen(static_cast<uint64_t>(n) + net.spec.hidden);
  const fk::Tensor x = fk::uniform({n, net.in}, -1.0, 1.0, {fk::DType::F32}, &gen);
  const std::vector<double> params = random_params(net, 7);
  const Result want = chain(net, x, params, fk::DType::F64, fk::kCPU);
  const Result layers = chain(net, x, params, fk::DType::F32, kGpu, precision_of(autocast));
  const Result got = fused(net, x, params);
  const double tol = half_tolerance(net, unit_roundoff(autocast));
  const bool gradients = net.activation != "relu";
  for (const auto& [name, side] : {std::pair<const char*, const Result*>{"fused", &got},
                                   std::pair<const char*, const Result*>{"per-layer", &layers}}) {
    expect_close(side->y, want.y, tol, what + " " + name + " y");
    if (!gradients) continue;
    expect_close(side->dx, want.dx, tol, what + " " + name + " dx");
    expect_close(side->dp, want.dp, tol, what + " " + name + " dparams");
  }
  // The same rounding points: the two device paths differ by f32 sums in
  // another order and the operands that round to the neighbouring half value.
  expect_close(got.y, layers.y, tol, what + " fused vs per-layer y");
  if (gradients) {
    expect_close(got.dx, layers.dx, tol, what + " fused vs per-layer dx");
    expect_close(got.dp, layers.dp, tol, what + " fused vs per-layer dparams");
  }
}

TEST(NefiFusedMlp, AutocastMatchesThePerLayerPathAndF64) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  for (fk::DType ac : {fk::DType::BF16, fk::DType::F16}) {
    for (int hidden : {16, 64, 128})
      for (bool skip : {false, true})
        for (const char* a : {"tanh", "relu", "sine"})
          expect_autocast_matches(make_net(hidden, skip, a, 13), ac, 333);
    for (const char* a : {"gelu", "silu", "softplus"})
      expect_autocast_matches(make_net(40, true, a, 18), ac, 97);
    expect_autocast_matches(make_net(128, true, "tanh", 50), ac, 4099);  // three chunks
  }
}

TEST(NefiFusedMlp, AutocastBackwardIsBitwiseReproducible) {
  NEFI_SKIP_WITHOUT_GPU();
  for (fk::DType ac : {fk::DType::BF16, fk::DType::F16}) {
    Net net = make_net(64, true, "tanh", 50);
    net.spec.autocast = ac;
    expect_fused_repeats(net);
  }
}

// The launches of a device field's raw values on `on` (no gradient), after a
// first call that fills the encoding's cache at progress 1.
int64_t raw_launches(nefi::NeuralField& field, const nefi::Domain& on) {
  fk::autograd::NoGradGuard ng;
  field.raw(on, 1.0);
  const int64_t before = fk::profile::counters().launches;
  field.raw(on, 1.0);
  return fk::profile::counters().launches - before;
}

// An autocast field: NEFI_FUSED_MLP=auto picks the fused op (one launch
// forward) at width 32 and the per-layer one at 128; the fused op matches
// =0 (per-layer cuBLAS at the same precision) and the CPU field's autocast
// path (bf16: the same rounding points; f16: fk autocast, which also stores
// z and the activations in f16).
TEST(NefiFusedMlp, AutocastNeuralFieldFusedMatchesPerLayerAndCpu) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const nefi::Domain d({13, 11});
  for (fk::DType ac : {fk::DType::BF16, fk::DType::F16})
    for (int hidden : {32, 128})
      for (const char* a : {"tanh", "gelu"}) {
        nefi::NeuralField cpu = make_field(hidden, true, a, 2, ac),
                          gpu = make_field(hidden, true, a, 2, ac);
        gpu.to(kGpu);
        const Result want = evaluate(cpu, d);
        Result per_layer, fused_path;
        {
          KnobOverride off("NEFI_FUSED_MLP", "0");
          per_layer = evaluate(gpu, d);
        }
        {
          KnobOverride automatic("NEFI_FUSED_MLP", "auto");
          if (hidden <= nefi::kFusedMlpAutoWidthAutocast)
            EXPECT_EQ(raw_launches(gpu, d), 1) << "auto did not fuse";
          else
            EXPECT_GT(raw_launches(gpu, d), 1) << "auto fused a wide net";
        }
        {
          KnobOverride on("NEFI_FUSED_MLP", "1");
          fused_path = evaluate(gpu, d);
        }
        const Net net = make_net(hidden, true, a, 2 * 9);
        const std::string what = std::string(fk::name(ac)) + " " + case_name(net, d.numel());
        const double tol = half_tolerance(net, unit_roundoff(ac));
        expect_close(fused_path.y, want.y, tol, what + " fused vs CPU raw");
        expect_close(fused_path.dp, want.dp, tol, what + " fused vs CPU gradient");
        expect_close(fused_path.y, per_layer.y, tol, what + " fused vs per-layer raw");
        expect_close(fused_path.dp, per_layer.dp, tol, what + " fused vs per-layer gradient");
      }
}

// The field passes its row count to the rule: under autocast a width-64 field
// fuses on 143 rows and runs per layer on 16900 (kFusedMlpAutoFewRows).
TEST(NefiFusedMlp, AutocastFieldOfWidth64FusesOnlyOnFewRows) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::NeuralField gpu = make_field(64, true, "tanh", 2, fk::DType::BF16);
  gpu.to(kGpu);
  KnobOverride automatic("NEFI_FUSED_MLP", "auto");
  EXPECT_EQ(raw_launches(gpu, nefi::Domain({13, 11})), 1) << "auto did not fuse on 143 rows";
  EXPECT_GT(raw_launches(gpu, nefi::Domain({130, 130})), 1) << "auto fused on 16900 rows";
}

void expect_error_naming(const std::function<void()>& body, const std::string& text) {
  try {
    body();
    ADD_FAILURE() << "no error; expected one naming '" << text << "'";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(NefiFusedMlp, UnsupportedNetworksAndOperandsAreRefused) {
  NEFI_SKIP_WITHOUT_GPU();
  // Wider than 128: auto keeps the per-layer path, 1 names the width.
  nefi::NeuralField wide = make_field(129, false, "tanh", 2);
  wide.to(kGpu);
  const nefi::Domain d({5, 4});
  {
    KnobOverride on("NEFI_FUSED_MLP", "1");
    expect_error_naming([&] { wide.raw(d, 1.0); }, "hidden width 129");
  }
  EXPECT_EQ(wide.raw(d, 1.0).size(0), d.numel());
  // The op itself: operands of another dtype, device or size.
  const Net net = make_net(16, true, "relu", 5);
  const fk::Tensor x = fk::ones({10, 5}, {fk::DType::F32, kGpu});
  const fk::Tensor p = fk::zeros({net.numel()}, {fk::DType::F32, kGpu});
  expect_error_naming([&] { nefi::fused_mlp_device(x.to(fk::DType::F64), p, net.spec); }, "f32");
  expect_error_naming([&] { nefi::fused_mlp_device(x, p.to(fk::kCPU), net.spec); },
                      "one CUDA device");
  expect_error_naming([&] { nefi::fused_mlp_device(x, p.narrow(0, 1, net.numel() - 1), net.spec); },
                      std::to_string(net.numel()) + " params");
  nefi::FusedMlpSpec too_wide = net.spec;
  too_wide.out = 200;
  expect_error_naming([&] { nefi::fused_mlp_device(x, p, too_wide); }, "output width 200");
  EXPECT_EQ(nefi::fused_mlp_device(x, p, net.spec).shape(), fk::Dims({10, 3}));
}

}  // namespace
