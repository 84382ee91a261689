// The fused MLP kernels' arithmetic (nefi/cuda/fused_mlp.cu through
// nefi/cuda/fused_mlp_cells.h) emulated on the host: every row carried
// through the layers with the kernels' f32 FMA sums in their order, their
// rounding of operands to f16 / bf16 under autocast at exactly their points
// (the cells' own functions), the per-2048-row gradient partials summed in
// chunk order. Checked against a plain f64 chain of fk ops (every parameter
// its own leaf) with tolerances from the unit round-off of f32, f16 and bf16,
// and against NeuralField's CPU autocast path. Runs in every build: the
// kernels themselves are compared with the per-layer cuBLAS path on a GPU
// (tests/nefi/cuda/fused_mlp_device_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/random.h"
#include "nefi/cuda/fused_mlp_cells.h"
#include "nefi/cuda/fused_mlp_kernels.h"
#include "nefi/domain.h"
#include "nefi/field/dense.h"
#include "nefi/field/fused_mlp_device.h"
#include "nefi/field/fused_mlp_reference.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"

namespace {

namespace nc = nefi::cuda;

constexpr double kW0 = 30.0;
constexpr double kU32 = 0x1p-24, kU16 = 0x1p-11, kUBf16 = 0x1p-8;  // unit round-offs

using Result = nefi::fused_mlp_test::MlpResult;

// s's layers in the flat parameters' order.
std::vector<nefi::fused_mlp_test::MlpLayer> layers_of(const nc::FusedMlpShape& s) {
  std::vector<nefi::fused_mlp_test::MlpLayer> layers;
  for (int l = 0; l <= s.depth; ++l) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    layers.push_back({L.rows, L.fan_in});
  }
  return layers;
}

// What the kernels compute for features x (n, in), flat params p and
// g = dL/dy (n, out), operands rounded to P in the hidden layers.
template <int P>
Result emulate(const nc::FusedMlpShape& s, const std::vector<float>& x, const std::vector<float>& p,
               const std::vector<float>& g, int64_t n) {
  const int H = s.hidden, D = s.depth;
  std::vector<float> zs(static_cast<size_t>(D * n * H)), gzs(zs.size());
  Result res{std::vector<double>(n * s.out), std::vector<double>(n * s.in), {}};
  auto weight = [&](int l, int c, int k) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    return nc::fused_layer_operand<P>(s, l, p[L.weight + c * L.fan_in + k]);
  };
  auto bias = [&](int l, int c) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    return p[L.weight + static_cast<int64_t>(L.rows) * L.fan_in + c];
  };
  for (int64_t r = 0; r < n; ++r) {
    // Forward: the features rounded once (only hidden layers read them); a
    // layer's activations rounded when the next layer is a hidden one.
    std::vector<float> xr(s.in), h;
    for (int k = 0; k < s.in; ++k) xr[k] = nc::fused_operand<P>(x[r * s.in + k]);
    for (int l = 0; l <= D; ++l) {
      const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
      std::vector<float> in = l == 0 ? xr : h;
      if (l == s.skip) in.insert(in.end(), xr.begin(), xr.end());
      std::vector<float> next(L.rows);
      for (int c = 0; c < L.rows; ++c) {
        float acc = 0.f;
        for (int k = 0; k < L.fan_in; ++k) acc = std::fma(in[k], weight(l, c, k), acc);
        const float v = acc + bias(l, c);
        if (l == D) {
          res.y[r * s.out + c] = v;
        } else {
          zs[(l * n + r) * H + c] = v;
          next[c] = nc::fused_layer_operand<P>(s, l + 1, nc::fused_activate(s.act, v, s.w0));
        }
      }
      h = std::move(next);
    }
    // Backward: dL/dh through the f32 head, then each hidden layer's dL/dz
    // (kept f32) rounded as the operand of the product with its weight.
    std::vector<float> X(H), x_share(s.in, 0.f);
    for (int k = 0; k < H; ++k) {
      float acc = 0.f;
      for (int c = 0; c < s.out; ++c) acc = std::fma(g[r * s.out + c], weight(D, c, k), acc);
      X[k] = acc;
    }
    for (int l = D - 1; l >= 0; --l) {
      const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
      std::vector<float> G(H);
      for (int c = 0; c < H; ++c) {
        const float v = nc::fused_activation_grad(s.act, X[c], zs[(l * n + r) * H + c], s.w0);
        gzs[(l * n + r) * H + c] = v;
        G[c] = nc::fused_operand<P>(v);
      }
      std::vector<float> below(L.fan_in);
      for (int k = 0; k < L.fan_in; ++k) {
        float acc = 0.f;
        for (int c = 0; c < H; ++c) acc = std::fma(G[c], weight(l, c, k), acc);
        below[k] = acc;
      }
      if (l == s.skip) std::copy(below.begin() + H, below.end(), x_share.begin());
      if (l > 0) std::copy(below.begin(), below.begin() + H, X.begin());
      if (l == 0)
        for (int k = 0; k < s.in; ++k)
          res.dx[r * s.in + k] = s.skip > 0 ? below[k] + x_share[k] : below[k];
    }
  }
  // Parameter gradient: per chunk of rows, [dW | db] = gz^T [x_in | 1] with
  // the operands of dW rounded and db's gz f32; then the chunks in order.
  const int64_t chunks = nc::fused_mlp_grad_chunks(n), chunk_rows = nc::fused_mlp_chunk_rows(n);
  res.dp.assign(nc::fused_mlp_numel(s), 0.0);
  for (int l = 0; l <= D; ++l) {
    const nc::FusedLayer L = nc::fused_mlp_layer(s, l);
    auto input = [&](int64_t r, int k) {
      if (k == L.fan_in) return 1.f;
      const float v = l == 0 ? x[r * s.in + k]
                      : k >= s.hidden
                          ? x[r * s.in + k - s.hidden]
                          : nc::fused_activate(s.act, zs[((l - 1) * n + r) * H + k], s.w0);
      return nc::fused_layer_operand<P>(s, l, v);
    };
    for (int c = 0; c < L.rows; ++c)
      for (int k = 0; k <= L.fan_in; ++k) {
        float total = 0.f;
        for (int64_t ch = 0; ch < chunks; ++ch) {
          float acc = 0.f;
          for (int64_t r = ch * chunk_rows; r < std::min(n, (ch + 1) * chunk_rows); ++r) {
            const float gv = l == D ? g[r * s.out + c] : gzs[(l * n + r) * H + c];
            const float gw = k == L.fan_in ? gv : nc::fused_layer_operand<P>(s, l, gv);
            acc = std::fma(gw, input(r, k), acc);
          }
          total += acc;
        }
        res.dp[L.weight + (k < L.fan_in ? static_cast<int64_t>(c) * L.fan_in + k
                                        : static_cast<int64_t>(L.rows) * L.fan_in + c)] = total;
      }
  }
  return res;
}

Result emulate_as(int operands, const nc::FusedMlpShape& s, const std::vector<float>& x,
                  const std::vector<float>& p, const std::vector<float>& g, int64_t n) {
  if (operands == nc::kFusedF16) return emulate<nc::kFusedF16>(s, x, p, g, n);
  if (operands == nc::kFusedBf16) return emulate<nc::kFusedBf16>(s, x, p, g, n);
  return emulate<nc::kFusedF32>(s, x, p, g, n);
}

const char* activation_name(int act) {
  static const char* names[] = {"tanh", "relu", "gelu", "silu", "softplus", "sine"};
  return names[act];
}

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
      return fk::sin(fk::mul(z, kW0));
  }
}

// The network in f64 with fk ops, each weight and bias its own leaf; the
// gradients of sum(y * g).
Result chain_f64(const nc::FusedMlpShape& s, const std::vector<float>& x,
                 const std::vector<float>& p, const std::vector<float>& g, int64_t n) {
  auto f64 = [](const std::vector<float>& v, fk::Dims shape) {
    return fk::from_vector(std::vector<double>(v.begin(), v.end()), shape);
  };
  return nefi::fused_mlp_test::layer_chain(
      layers_of(s), s.skip, f64(x, {n, s.in}), std::vector<double>(p.begin(), p.end()),
      f64(g, {n, s.out}), [&](int, const fk::Tensor& h, const fk::Tensor& w, const fk::Tensor& b) {
        return activate(s.act, nefi::dense(h, w, b, nefi::DenseActivation::None));
      });
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

nc::FusedMlpShape make_shape(int hidden, bool skip, int act, int in, int operands) {
  nc::FusedMlpShape s;
  s.in = in;
  s.hidden = hidden;
  s.depth = 3;
  s.out = 3;
  s.skip = skip ? 2 : -1;
  s.act = act;
  s.w0 = static_cast<float>(kW0);
  s.operands = operands;
  return s;
}

// Features in +-1 and g in +-1, then the parameters (random_mlp_params).
struct Problem {
  std::vector<float> x, p, g;
};

Problem random_problem(const nc::FusedMlpShape& s, int64_t n, uint64_t seed) {
  fk::Generator gen(seed);
  auto draw = [&](int64_t count) {
    return fk::uniform({count}, -1.0, 1.0, {fk::DType::F32}, &gen).to_vector<float>();
  };
  std::vector<float> x = draw(n * s.in), g = draw(n * s.out);
  std::vector<float> p =
      nefi::fused_mlp_test::random_mlp_params(layers_of(s), s.act == nc::kFusedSine, kW0, gen);
  return {std::move(x), std::move(p), std::move(g)};
}

// The error of the network relative to its largest value. f32: a sum of K
// terms is off by at most ~K u32 of the sum of its magnitudes, once per
// layer (depth + 1 of them), each passing earlier errors on at a gain near 1
// (Xavier / SIREN scaling); sine multiplies every angle's error by w0; the
// factor 4 covers the backward's second product per layer and the sums
// being of magnitudes rather than values.
double f32_tolerance(const nc::FusedMlpShape& s) {
  return 4 * kU32 * (s.depth + 1) * (s.hidden + s.in) * (s.act == nc::kFusedSine ? kW0 : 1);
}

// Autocast, u the half type's unit round-off: rounding an operand moves it
// by at most u of itself, at random sign from operand to operand, so a
// layer's sums move by about u of their size (the 2u sqrt(K) worst case
// needs every error aligned), and the layers add up: 2 u (depth + 1). The
// emulation meets it with a margin of 2 at every width, activation and row
// count below (worst 1.0 u (depth + 1): sine's dL/dfeatures at hidden 128).
// Sine needs no w0 here: the error of an angle w0 z is u of the angle, which
// SIREN's initialisation keeps near 1. Relu's gradients are left out: a z
// within rounding of 0 flips its derivative (0 or 1), a change of the size
// of the gradient itself.
double half_tolerance(const nc::FusedMlpShape& s, double u) {
  return 2 * u * (s.depth + 1);
}

double unit_roundoff(int operands) {
  return operands == nc::kFusedF16 ? kU16 : operands == nc::kFusedBf16 ? kUBf16 : kU32;
}

std::string case_name(const nc::FusedMlpShape& s, int64_t n) {
  static const char* types[] = {"f32", "f16", "bf16"};
  return std::string(types[s.operands]) + " " + activation_name(s.act) + " hidden " +
         std::to_string(s.hidden) + (s.skip > 0 ? " skip" : " no-skip") + " rows " +
         std::to_string(n);
}

TEST(NefiFusedMlpCells, OperandRoundingIsToNearestEven) {
  // f16 keeps 11 significant bits, bf16 8: halfway cases go to the even one.
  EXPECT_EQ(nc::fused_operand<nc::kFusedF16>(1.f + 0x1p-11f), 1.f);
  EXPECT_EQ(nc::fused_operand<nc::kFusedF16>(1.f + 3 * 0x1p-11f), 1.f + 0x1p-9f);
  EXPECT_EQ(nc::fused_operand<nc::kFusedF16>(1.f + 0x1p-11f + 0x1p-20f), 1.f + 0x1p-10f);
  EXPECT_EQ(nc::fused_operand<nc::kFusedF16>(70000.f), INFINITY);  // above f16's 65504
  EXPECT_EQ(nc::fused_operand<nc::kFusedF16>(0x1p-25f), 0.f);      // half the least subnormal
  EXPECT_EQ(nc::fused_operand<nc::kFusedBf16>(1.f + 0x1p-8f), 1.f);
  EXPECT_EQ(nc::fused_operand<nc::kFusedBf16>(1.f + 3 * 0x1p-8f), 1.f + 0x1p-6f);
  EXPECT_NEAR(nc::fused_operand<nc::kFusedBf16>(-3.0e38f) / -3.0e38f, 1.0, kUBf16);  // f32's range
  EXPECT_EQ(nc::fused_operand<nc::kFusedF32>(1.f + 0x1p-23f), 1.f + 0x1p-23f);
  // The head's operands stay f32, a hidden layer's are rounded.
  const nc::FusedMlpShape s = make_shape(8, false, nc::kFusedTanh, 2, nc::kFusedBf16);
  EXPECT_EQ(nc::fused_layer_operand<nc::kFusedBf16>(s, s.depth, 1.f + 0x1p-10f), 1.f + 0x1p-10f);
  EXPECT_EQ(nc::fused_layer_operand<nc::kFusedBf16>(s, s.depth - 1, 1.f + 0x1p-10f), 1.f);
}

// Each operand type against f64: within its tolerance, and the half types
// off by more than f32's (their rounding is applied, not skipped).
void expect_emulation_matches_f64(const nc::FusedMlpShape& s, int64_t n) {
  const Problem pr = random_problem(s, n, static_cast<uint64_t>(n) + s.hidden);
  const Result want = chain_f64(s, pr.x, pr.p, pr.g, n);
  const Result got = emulate_as(s.operands, s, pr.x, pr.p, pr.g, n);
  const std::string what = case_name(s, n);
  const bool half = s.operands != nc::kFusedF32;
  const double u = unit_roundoff(s.operands);
  const double tol = half ? half_tolerance(s, u) : f32_tolerance(s);
  const double ey = relative_error(got.y, want.y), edx = relative_error(got.dx, want.dx),
               edp = relative_error(got.dp, want.dp);
  EXPECT_LE(ey, tol) << what << " y";
  if (!half || s.act != nc::kFusedRelu) {
    EXPECT_LE(edx, tol) << what << " dx";
    EXPECT_LE(edp, tol) << what << " dparams";
  }
  // The half types' error is their rounding's, far above f32's (~1e-6):
  // at least 0.04 u (depth + 1) in every case above, the threshold half that.
  if (half) {
    EXPECT_GT(std::max({ey, edx, edp}), 0.02 * u * (s.depth + 1))
        << what << ": no half rounding seen";
  }
}

// 333 rows (ragged against the 64-row tile); 13 features.
TEST(NefiFusedMlpCells, EveryOperandTypeMatchesF64) {
  for (int operands : {nc::kFusedF32, nc::kFusedF16, nc::kFusedBf16})
    for (int hidden : {16, 64})
      for (bool skip : {false, true})
        for (int act : {nc::kFusedTanh, nc::kFusedRelu, nc::kFusedSine})
          expect_emulation_matches_f64(make_shape(hidden, skip, act, 13, operands), 333);
}

TEST(NefiFusedMlpCells, WidestNetworkMatchesF64) {
  for (int operands : {nc::kFusedF16, nc::kFusedBf16})
    expect_emulation_matches_f64(make_shape(128, true, nc::kFusedSine, 50, operands), 160);
}

TEST(NefiFusedMlpCells, EveryActivationMatchesF64) {
  for (int operands : {nc::kFusedF16, nc::kFusedBf16})
    for (int act = nc::kFusedTanh; act <= nc::kFusedSine; ++act)
      expect_emulation_matches_f64(make_shape(40, true, act, 18, operands), 97);
}

// 4099 rows: three gradient chunks (1367, 1367, 1365 rows) summed in order.
TEST(NefiFusedMlpCells, SeveralGradientChunks) {
  EXPECT_EQ(nc::fused_mlp_grad_chunks(4099), 3);
  EXPECT_EQ(nc::fused_mlp_chunk_rows(4099), 1367);
  EXPECT_EQ(nc::fused_mlp_grad_chunks(1 << 20), 128);
  expect_emulation_matches_f64(make_shape(32, true, nc::kFusedSilu, 50, nc::kFusedBf16), 4099);
}

// NeuralField's CPU autocast path on its own features and parameters against
// the emulated kernels. bf16 rounds at the kernels' points (dense.h's Bf16:
// the encoding and each hidden layer's output rounded once as the next
// hidden layer's operand, the head f32), so the two agree to f32 round-off
// (measured: 1e-7 raw, 1e-6 gradient) while the f32 kernels' result is
// off by bf16's (4e-4 to 7e-3): a rounding point moved or missed would
// show. f16 (fk autocast) rounds at more points (z, the activations and
// the head's input are stored in f16): within f16's tolerance.
TEST(NefiFusedMlpCells, MatchesTheCpuAutocastField) {
  for (fk::DType ac : {fk::DType::BF16, fk::DType::F16})
    for (const char* a : {"tanh", "gelu", "sine"}) {
      nefi::NeuralFieldConfig cfg;
      cfg.hidden = 32;
      cfg.depth = 3;
      cfg.skip_at = 2;
      cfg.activation = a;
      cfg.n_octaves = 4;
      cfg.autocast = ac;
      nefi::NeuralField f(2, {nefi::softplus_head("a", 0.3), nefi::identity_head("b", 0.1)}, cfg,
                          11);
      const nefi::Domain d({13, 11});
      const int64_t n = d.numel();
      const fk::Tensor features =
          f.encoding().forward(d.coords(fk::DType::F32).reshape({n, 2}), 0.7);
      const int operands = ac == fk::DType::BF16 ? nc::kFusedBf16 : nc::kFusedF16;
      nc::FusedMlpShape s = make_shape(cfg.hidden, true, nefi::cuda::kFusedTanh,
                                       static_cast<int>(features.size(1)), operands);
      s.out = 2;
      s.act = static_cast<int>(nefi::fused_mlp_activation(a));
      fk::Generator gen(5);
      const fk::Tensor r = fk::uniform({n, 2}, -1.0, 1.0, {fk::DType::F32}, &gen);
      const fk::Tensor raw = f.raw(d, 0.7);
      fk::sum(fk::mul(raw, r)).backward();
      const std::vector<double> y = raw.to_vector<double>(),
                                dp = f.params().flat().grad().to_vector<double>();
      const std::vector<float> x = features.to_vector<float>(),
                               p = f.params().flat().to_vector<float>(), g = r.to_vector<float>();
      const Result got = emulate_as(operands, s, x, p, g, n);
      const Result f32 = emulate<nc::kFusedF32>(s, x, p, g, n);
      const std::string what = std::string(fk::name(ac)) + " " + a;
      const double tol =
          ac == fk::DType::BF16 ? f32_tolerance(s) : half_tolerance(s, unit_roundoff(operands));
      EXPECT_LE(relative_error(got.y, y), tol) << what << " raw";
      EXPECT_LE(relative_error(got.dp, dp), tol) << what << " gradient";
      if (ac == fk::DType::BF16) {
        EXPECT_GT(std::max(relative_error(f32.y, y), relative_error(f32.dp, dp)), 4 * tol)
            << what << ": the field's bf16 rounding is not seen";
      }
    }
}

// The fused kernel's relu keeps a NaN as fk::relu does; its gradient there is 0.
TEST(NefiFusedMlpCells, ReluKeepsNaN) {
  EXPECT_TRUE(std::isnan(nefi::cuda::fused_activate(nefi::cuda::kFusedRelu, NAN, 1.f)));
  EXPECT_EQ(nefi::cuda::fused_activate(nefi::cuda::kFusedRelu, -2.f, 1.f), 0.f);
  EXPECT_EQ(nefi::cuda::fused_activation_grad(nefi::cuda::kFusedRelu, 3.f, NAN, 1.f), 0.f);
}

}  // namespace
