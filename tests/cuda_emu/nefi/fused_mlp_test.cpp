// fused_mlp.cu's kernels run on the emulated device (emulated_device.h): the
// forward (y and the saved pre-activations), the backward (every hidden
// layer's dL/dz and dL/dx) and the per-chunk parameter-gradient partials,
// bit for bit against a host loop of the arithmetic fused_mlp.cu and
// fused_mlp_cells.h document (f32 FMA sums in input order from zero, then the
// bias; f16 / bf16 operands rounded at the cells' points; the partials' rows
// in order per chunk), in both thread orders, every output guarded against
// writes past its end. Then the kernels' network against the f64 chain of fk
// ops (fused_mlp_reference.h) within the tolerances of
// tests/nefi/field/fused_mlp_cells_test.cpp, with the partials summed over
// chunks as fused_mlp.cpp sums them (launch_column_sums: in chunk order).
// Shapes: widths 1 to 128 (not multiples of the 4-wide tiles too), depths 1
// to 6, with and without the skip, every activation and operand type, row
// counts that leave the last 64- or 32-row block partial, several gradient
// chunks, no rows, and the 32-row blocks a shape too wide for 64 needs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "nefi/cuda/fused_mlp_cells.h"
#include "nefi/cuda/fused_mlp_kernels.h"
#include "nefi/field/dense.h"
#include "nefi/field/fused_mlp_reference.h"

// The emulated launchers this file runs: fused_mlp_kernels.h's, in ::emu (a
// signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
int fused_mlp_block_rows(const FusedMlpShape& s, int device);
void launch_fused_mlp_forward(const FusedMlpShape& s, const float* x, const float* params,
                              int64_t n, int block_rows, float* zs, float* y, void* stream);
void launch_fused_mlp_backward(const FusedMlpShape& s, const float* params, const float* zs,
                               const float* g, int64_t n, int block_rows, float* gzs, float* dx,
                               void* stream);
void launch_fused_mlp_param_partials(const FusedMlpShape& s, const float* x, const float* zs,
                                     const float* gzs, const float* g, int64_t n, float* partials,
                                     void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;

namespace {

constexpr float kPoison = -777.f;
// Floats after every output that no launch may touch.
constexpr int64_t kGuard = 16;
constexpr float kW0 = 30.f;

size_t at(int64_t i) {
  return static_cast<size_t>(i);
}

nc::FusedMlpShape make_shape(int in, int hidden, int depth, int out, int skip, int act,
                             int operands) {
  nc::FusedMlpShape s;
  s.in = in;
  s.hidden = hidden;
  s.depth = depth;
  s.out = out;
  s.skip = skip;
  s.act = act;
  s.w0 = kW0;
  s.operands = operands;
  return s;
}

std::string case_name(const nc::FusedMlpShape& s, int64_t n, int block_rows) {
  static const char* types[] = {"f32", "f16", "bf16"};
  static const char* acts[] = {"tanh", "relu", "gelu", "silu", "softplus", "sine"};
  return std::string(types[s.operands]) + " " + acts[s.act] + " in " + std::to_string(s.in) +
         " hidden " + std::to_string(s.hidden) + " depth " + std::to_string(s.depth) + " out " +
         std::to_string(s.out) + " skip " + std::to_string(s.skip) + " rows " + std::to_string(n) +
         " block_rows " + std::to_string(block_rows);
}

std::vector<nefi::fused_mlp_test::MlpLayer> layers_of(const nc::FusedMlpShape& s) {
  std::vector<nefi::fused_mlp_test::MlpLayer> layers;
  for (int l = 0; l <= s.depth; ++l) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    layers.push_back({L.rows, L.fan_in});
  }
  return layers;
}

// Features and dL/dy in +-1 (every 5th feature exactly 0: relu's kink in
// the first layer), parameters as NeuralField draws them.
struct Problem {
  std::vector<float> x, p, g;
};

Problem random_problem(const nc::FusedMlpShape& s, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Problem pr{std::vector<float>(at(n * s.in)), {}, std::vector<float>(at(n * s.out))};
  for (float& v : pr.x) v = u(rng);
  for (size_t i = 0; i < pr.x.size(); i += 5) pr.x[i] = 0.f;
  for (float& v : pr.g) v = u(rng);
  fk::Generator gen(seed);
  pr.p = nefi::fused_mlp_test::random_mlp_params(layers_of(s), s.act == nc::kFusedSine, kW0, gen);
  return pr;
}

// What the three launchers write, each followed by kGuard floats.
struct Outputs {
  std::vector<float> y, zs, gzs, dx, partials;
};

std::vector<float> guarded(int64_t count) {
  return std::vector<float>(at(count + kGuard), kPoison);
}

Outputs poisoned_outputs(const nc::FusedMlpShape& s, int64_t n) {
  const int64_t hidden_values = s.depth * n * s.hidden;
  return {guarded(n * s.out), guarded(hidden_values), guarded(hidden_values), guarded(n * s.in),
          guarded(nc::fused_mlp_grad_chunks(n) * nc::fused_mlp_numel(s))};
}

// The kernels' arithmetic written out row by row: each product sum an f32
// FMA chain over the layer's inputs in order from 0, then + bias; operands
// rounded to P where fused_mlp_cells.h says.
template <int P>
Outputs reference(const nc::FusedMlpShape& s, const Problem& pr, int64_t n) {
  const int H = s.hidden, D = s.depth;
  Outputs o = poisoned_outputs(s, n);
  auto weight = [&](int l, int c, int k) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    return nc::fused_layer_operand<P>(s, l, pr.p[at(L.weight + int64_t{c} * L.fan_in + k)]);
  };
  auto bias = [&](int l, int c) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    return pr.p[at(L.weight + int64_t{L.rows} * L.fan_in + c)];
  };
  auto z_at = [&](std::vector<float>& v, int l, int64_t r, int c) -> float& {
    return v[at((l * n + r) * H + c)];
  };
  for (int64_t r = 0; r < n; ++r) {
    std::vector<float> features(at(s.in)), h;
    for (int k = 0; k < s.in; ++k) features[at(k)] = nc::fused_operand<P>(pr.x[at(r * s.in + k)]);
    for (int l = 0; l <= D; ++l) {
      const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
      std::vector<float> input = l == 0 ? features : h;
      if (l == s.skip) input.insert(input.end(), features.begin(), features.end());
      h.assign(at(L.rows), 0.f);
      for (int c = 0; c < L.rows; ++c) {
        float acc = 0.f;
        for (int k = 0; k < L.fan_in; ++k) acc = std::fma(input[at(k)], weight(l, c, k), acc);
        const float v = acc + bias(l, c);
        if (l == D) {
          o.y[at(r * s.out + c)] = v;
        } else {
          z_at(o.zs, l, r, c) = v;
          h[at(c)] = nc::fused_layer_operand<P>(s, l + 1, nc::fused_activate(s.act, v, s.w0));
        }
      }
    }
    // dL/dh of the last hidden layer through the f32 head, then per layer
    // dL/dz (stored f32) rounded as the operand of dL/d(input).
    std::vector<float> da(at(H)), dx_share(at(s.in), 0.f);
    for (int k = 0; k < H; ++k) {
      float acc = 0.f;
      for (int c = 0; c < s.out; ++c) acc = std::fma(pr.g[at(r * s.out + c)], weight(D, c, k), acc);
      da[at(k)] = acc;
    }
    for (int l = D - 1; l >= 0; --l) {
      const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
      std::vector<float> gz(at(H));
      for (int c = 0; c < H; ++c) {
        const float v = nc::fused_activation_grad(s.act, da[at(c)], z_at(o.zs, l, r, c), s.w0);
        z_at(o.gzs, l, r, c) = v;
        gz[at(c)] = nc::fused_operand<P>(v);
      }
      std::vector<float> d_input(at(L.fan_in));
      for (int k = 0; k < L.fan_in; ++k) {
        float acc = 0.f;
        for (int c = 0; c < H; ++c) acc = std::fma(gz[at(c)], weight(l, c, k), acc);
        d_input[at(k)] = acc;
      }
      if (l == s.skip) std::copy(d_input.begin() + H, d_input.end(), dx_share.begin());
      if (l > 0) std::copy(d_input.begin(), d_input.begin() + H, da.begin());
      if (l == 0)
        for (int k = 0; k < s.in; ++k)
          o.dx[at(r * s.in + k)] = s.skip > 0 ? d_input[at(k)] + dx_share[at(k)] : d_input[at(k)];
    }
  }
  // Per chunk, [dW | db] = gz^T [input | 1] over its rows in order: dW's gz
  // rounded, db's f32.
  const int64_t chunks = nc::fused_mlp_grad_chunks(n), chunk_rows = nc::fused_mlp_chunk_rows(n);
  const int64_t numel = nc::fused_mlp_numel(s);
  for (int l = 0; l <= D; ++l) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    auto input = [&](int64_t r, int k) {
      if (k == L.fan_in) return 1.f;
      float v;
      if (l == 0)
        v = pr.x[at(r * s.in + k)];
      else if (k >= H)
        v = pr.x[at(r * s.in + k - H)];
      else
        v = nc::fused_activate(s.act, z_at(o.zs, l - 1, r, k), s.w0);
      return nc::fused_layer_operand<P>(s, l, v);
    };
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      for (int c = 0; c < L.rows; ++c)
        for (int k = 0; k <= L.fan_in; ++k) {
          float acc = 0.f;
          for (int64_t r = chunk * chunk_rows; r < std::min(n, (chunk + 1) * chunk_rows); ++r) {
            const float gv = l == D ? pr.g[at(r * s.out + c)] : z_at(o.gzs, l, r, c);
            acc = std::fma(k == L.fan_in ? gv : nc::fused_layer_operand<P>(s, l, gv), input(r, k),
                           acc);
          }
          const int64_t flat =
              k < L.fan_in ? int64_t{c} * L.fan_in + k : int64_t{L.rows} * L.fan_in + c;
          o.partials[at(chunk * numel + L.weight + flat)] = acc;
        }
  }
  return o;
}

Outputs reference_as(const nc::FusedMlpShape& s, const Problem& pr, int64_t n) {
  if (s.operands == nc::kFusedF16) return reference<nc::kFusedF16>(s, pr, n);
  if (s.operands == nc::kFusedBf16) return reference<nc::kFusedBf16>(s, pr, n);
  return reference<nc::kFusedF32>(s, pr, n);
}

Outputs run_kernels(const nc::FusedMlpShape& s, const Problem& pr, int64_t n, int block_rows) {
  Outputs o = poisoned_outputs(s, n);
  nc::emu::launch_fused_mlp_forward(s, pr.x.data(), pr.p.data(), n, block_rows, o.zs.data(),
                                    o.y.data(), nullptr);
  nc::emu::launch_fused_mlp_backward(s, pr.p.data(), o.zs.data(), pr.g.data(), n, block_rows,
                                     o.gzs.data(), o.dx.data(), nullptr);
  nc::emu::launch_fused_mlp_param_partials(s, pr.x.data(), o.zs.data(), o.gzs.data(), pr.g.data(),
                                           n, o.partials.data(), nullptr);
  return o;
}

void expect_same_outputs(const Outputs& got, const Outputs& want, const std::string& what) {
  expect_same_bits(got.y, want.y, what + " y");
  expect_same_bits(got.zs, want.zs, what + " zs");
  expect_same_bits(got.gzs, want.gzs, what + " gzs");
  expect_same_bits(got.dx, want.dx, what + " dx");
  expect_same_bits(got.partials, want.partials, what + " partials");
}

// The three launchers on a random problem against the host loop, in both
// thread orders.
void expect_kernels_match(const nc::FusedMlpShape& s, int64_t n, int block_rows) {
  const std::string what = case_name(s, n, block_rows);
  const Problem pr = random_problem(s, n, static_cast<uint32_t>(n * 131 + s.hidden * 7 + s.act));
  const Outputs want = reference_as(s, pr, n);
  in_both_orders(
      [&](fkemu::Order) { expect_same_outputs(run_kernels(s, pr, n, block_rows), want, what); });
}

void expect_every_activation_matches(int operands) {
  for (int act = nc::kFusedTanh; act <= nc::kFusedSine; ++act)
    expect_kernels_match(make_shape(5, 17, 3, 3, 2, act, operands), 150, 64);
}

TEST(EmulatedFusedMlp, EveryActivationInF32) {
  expect_every_activation_matches(nc::kFusedF32);
}

TEST(EmulatedFusedMlp, EveryActivationWithF16Operands) {
  expect_every_activation_matches(nc::kFusedF16);
}

TEST(EmulatedFusedMlp, EveryActivationWithBf16Operands) {
  expect_every_activation_matches(nc::kFusedBf16);
}

// Widths 1 to 128 (1, 17 and 13 leave the 4-wide tiles partial), depths 1
// to 4, skip or not; 97 rows: 2 blocks of 64 or 4 of 32, the last partial.
TEST(EmulatedFusedMlp, NarrowNetworks) {
  for (int rows : {64, 32}) {
    expect_kernels_match(make_shape(1, 1, 1, 1, -1, nc::kFusedTanh, nc::kFusedF32), 97, rows);
    expect_kernels_match(make_shape(3, 1, 3, 2, 2, nc::kFusedSilu, nc::kFusedBf16), 97, rows);
    expect_kernels_match(make_shape(2, 17, 2, 1, 1, nc::kFusedSine, nc::kFusedF16), 97, rows);
  }
}

// One row (a block of dead rows but one), exactly two 64-row blocks, and a
// deeper network with its skip in the middle.
TEST(EmulatedFusedMlp, RowCountsAndDepth) {
  expect_kernels_match(make_shape(3, 10, 2, 2, 1, nc::kFusedSilu, nc::kFusedF32), 1, 64);
  expect_kernels_match(make_shape(3, 10, 2, 2, 1, nc::kFusedTanh, nc::kFusedBf16), 128, 64);
  expect_kernels_match(make_shape(4, 12, 6, 2, 3, nc::kFusedRelu, nc::kFusedF16), 75, 32);
}

TEST(EmulatedFusedMlp, Width64) {
  for (int rows : {64, 32})
    expect_kernels_match(make_shape(13, 64, 4, 17, 2, nc::kFusedGelu, nc::kFusedF32), 97, rows);
  expect_kernels_match(make_shape(13, 64, 2, 5, -1, nc::kFusedSoftplus, nc::kFusedBf16), 70, 64);
}

TEST(EmulatedFusedMlp, Width128) {
  expect_kernels_match(make_shape(7, 128, 1, 128, -1, nc::kFusedRelu, nc::kFusedF32), 70, 64);
  expect_kernels_match(make_shape(50, 128, 2, 3, 1, nc::kFusedSine, nc::kFusedF16), 70, 32);
  expect_kernels_match(make_shape(13, 128, 3, 3, 2, nc::kFusedTanh, nc::kFusedBf16), 70, 64);
}

// 2100 rows: two gradient chunks of 1050, each block's partials its own.
TEST(EmulatedFusedMlp, SeveralGradientChunks) {
  ASSERT_EQ(nc::fused_mlp_grad_chunks(2100), 2);
  ASSERT_EQ(nc::fused_mlp_chunk_rows(2100), 1050);
  expect_kernels_match(make_shape(3, 8, 2, 2, 1, nc::kFusedTanh, nc::kFusedBf16), 2100, 64);
}

// hidden 128 with 128 features and the skip: 64 rows need 261 KiB of the
// H200's 227 in the forward, 32 rows fit; a 64-row forward is refused, not
// run.
TEST(EmulatedFusedMlp, ThirtyTwoRowBlocksWhereSixtyFourDoNotFit) {
  nc::FusedMlpShape s = make_shape(128, 128, 3, 3, 2, nc::kFusedTanh, nc::kFusedF32);
  ASSERT_EQ(nc::emu::fused_mlp_block_rows(s, 0), 32);
  const Problem pr = random_problem(s, 40, 3);
  Outputs o = poisoned_outputs(s, 40);
  EXPECT_THROW(nc::emu::launch_fused_mlp_forward(s, pr.x.data(), pr.p.data(), 40, 64, o.zs.data(),
                                                 o.y.data(), nullptr),
               fk::Error);
  expect_kernels_match(s, 40, 32);
  for (int operands : {nc::kFusedF16, nc::kFusedBf16}) {
    s.operands = operands;
    expect_kernels_match(s, 40, 32);
  }
}

TEST(EmulatedFusedMlp, BlockRowsOnTheH200) {
  EXPECT_EQ(nc::emu::fused_mlp_block_rows(make_shape(3, 64, 3, 3, 2, 0, 0), 0), 64);
  EXPECT_EQ(nc::emu::fused_mlp_block_rows(make_shape(64, 128, 3, 128, 2, 0, 0), 0), 64);
  // Without the skip the widest weight is 128 wide, not 256: 64 rows fit.
  EXPECT_EQ(nc::emu::fused_mlp_block_rows(make_shape(128, 128, 3, 3, -1, 0, 0), 0), 64);
  EXPECT_EQ(nc::emu::fused_mlp_block_rows(make_shape(128, 128, 3, 3, 2, 0, 0), 0), 32);
  EXPECT_EQ(nc::emu::fused_mlp_block_rows(make_shape(512, 128, 3, 3, 2, 0, 0), 0), 0);
}

// No rows: forward and backward write nothing; the partials are one chunk
// of zeros (the gradient of an empty batch).
TEST(EmulatedFusedMlp, NoRows) {
  const nc::FusedMlpShape s = make_shape(4, 17, 2, 3, 1, nc::kFusedTanh, nc::kFusedF16);
  const Problem pr = random_problem(s, 0, 1);
  const Outputs got = run_kernels(s, pr, 0, 64);
  Outputs want = poisoned_outputs(s, 0);
  std::fill(want.partials.begin(), want.partials.end() - kGuard, 0.f);
  expect_same_outputs(got, want, "no rows");
}

// zs and dx are optional: without them y and dL/dz are unchanged.
TEST(EmulatedFusedMlp, WithoutSavedActivationsOrFeatureGradient) {
  const nc::FusedMlpShape s = make_shape(6, 20, 3, 2, 2, nc::kFusedGelu, nc::kFusedBf16);
  const int64_t n = 45;
  const Problem pr = random_problem(s, n, 9);
  const Outputs want = reference_as(s, pr, n);
  std::vector<float> y = guarded(n * s.out), gzs = guarded(s.depth * n * s.hidden);
  in_both_orders([&](fkemu::Order) {
    nc::emu::launch_fused_mlp_forward(s, pr.x.data(), pr.p.data(), n, 64, nullptr, y.data(),
                                      nullptr);
    expect_same_bits(y, want.y, "y without zs");
    nc::emu::launch_fused_mlp_backward(s, pr.p.data(), want.zs.data(), pr.g.data(), n, 64,
                                       gzs.data(), nullptr, nullptr);
    expect_same_bits(gzs, want.gzs, "gzs without dx");
  });
}

TEST(EmulatedFusedMlp, RefusesUnknownOperands) {
  const nc::FusedMlpShape s = make_shape(2, 4, 1, 1, -1, nc::kFusedTanh, 3);
  Outputs o = poisoned_outputs(s, 4);
  const std::vector<float> x(8), p(at(nc::fused_mlp_numel(s))), g(4);
  EXPECT_THROW(nc::emu::launch_fused_mlp_forward(s, x.data(), p.data(), 4, 64, o.zs.data(),
                                                 o.y.data(), nullptr),
               fk::Error);
  EXPECT_THROW(nc::emu::launch_fused_mlp_backward(s, p.data(), o.zs.data(), g.data(), 4, 64,
                                                  o.gzs.data(), o.dx.data(), nullptr),
               fk::Error);
  EXPECT_THROW(nc::emu::launch_fused_mlp_param_partials(s, x.data(), o.zs.data(), o.gzs.data(),
                                                        g.data(), 4, o.partials.data(), nullptr),
               fk::Error);
}

// The network the kernels compute, independently of the host loop above:
// the f64 chain of fk ops.
fk::Tensor activate(int act, const fk::Tensor& z) {
  switch (act) {
    case nc::kFusedTanh:
      return fk::tanh(z);
    case nc::kFusedRelu:
      return fk::relu(z);
    case nc::kFusedGelu:
      return fk::gelu(z);
    case nc::kFusedSilu:
      return fk::silu(z);
    case nc::kFusedSoftplus:
      return fk::softplus(z);
    default:
      return fk::sin(fk::mul(z, static_cast<double>(kW0)));
  }
}

// max |got - want| over max(1, max |want|).
double relative_error(const std::vector<double>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double scale = 1, worst = 0;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    worst = std::max(worst, std::isnan(got[i]) ? INFINITY : std::fabs(got[i] - want[i]));
  return worst / scale;
}

std::vector<double> unguarded(const std::vector<float>& v) {
  return {v.begin(), v.end() - kGuard};
}

// fused_mlp_cells_test.cpp's bounds: f32 about K u per layer (times w0 for
// sine), the half types 2 u per layer; relu's gradients not under autocast
// (a z within rounding of 0 flips its derivative).
TEST(EmulatedFusedMlp, MatchesTheF64Network) {
  const int64_t n = 77;
  for (int operands : {nc::kFusedF32, nc::kFusedF16, nc::kFusedBf16})
    for (int act : {nc::kFusedRelu, nc::kFusedSoftplus, nc::kFusedSine}) {
      const nc::FusedMlpShape s = make_shape(9, 24, 3, 3, 2, act, operands);
      const std::string what = case_name(s, n, 64);
      const Problem pr = random_problem(s, n, 21);
      const Outputs got = run_kernels(s, pr, n, 64);
      auto f64 = [](const std::vector<float>& v, fk::Dims shape) {
        return fk::from_vector(std::vector<double>(v.begin(), v.end()), shape);
      };
      const nefi::fused_mlp_test::MlpResult want = nefi::fused_mlp_test::layer_chain(
          layers_of(s), s.skip, f64(pr.x, {n, s.in}), std::vector<double>(pr.p.begin(), pr.p.end()),
          f64(pr.g, {n, s.out}),
          [&](int, const fk::Tensor& h, const fk::Tensor& w, const fk::Tensor& b) {
            return activate(act, nefi::dense(h, w, b, nefi::DenseActivation::None));
          });
      // The gradient: the chunks summed in order, as launch_column_sums.
      const int64_t numel = nc::fused_mlp_numel(s);
      std::vector<double> dp(at(numel));
      for (int64_t i = 0; i < numel; ++i) {
        float sum = 0.f;
        for (int64_t chunk = 0; chunk < nc::fused_mlp_grad_chunks(n); ++chunk)
          sum += got.partials[at(chunk * numel + i)];
        dp[at(i)] = sum;
      }
      const double u = operands == nc::kFusedF16    ? 0x1p-11
                       : operands == nc::kFusedBf16 ? 0x1p-8
                                                    : 0x1p-24;
      const double tol = operands == nc::kFusedF32 ? 4 * u * (s.depth + 1) * (s.hidden + s.in) *
                                                         (act == nc::kFusedSine ? kW0 : 1)
                                                   : 2 * u * (s.depth + 1);
      EXPECT_LE(relative_error(unguarded(got.y), want.y), tol) << what << " y";
      if (operands == nc::kFusedF32 || act != nc::kFusedRelu) {
        EXPECT_LE(relative_error(unguarded(got.dx), want.dx), tol) << what << " dx";
        EXPECT_LE(relative_error(dp, want.dp), tol) << what << " dparams";
      }
    }
}

}  // namespace
