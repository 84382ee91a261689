// WaveOperator against independent references: the pulse's travel time
// between two receivers (speed c), reflections of the absorbing layers
// against a box large enough that nothing returns in the window,
// reciprocity (injection is the transposed sampling), finite differences of
// the gradient (f64) for every layer and rank, the checkpointed gradient
// bitwise equal to the full-memory one, the (N/k + k) S memory model, and
// the errors.
#include "nefi/operators/wave/wave_operator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/memory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/test_util.h"
#include "fk/thread_count.h"

namespace {

namespace wave = nefi::wave;
using fk::test::error_of;
using nefi::WaveOperator;
using nefi::WaveOperatorConfig;

WaveOperatorConfig small_config(int ndim, wave::Absorbing a, int order) {
  WaveOperatorConfig cfg;
  cfg.wave.extent.assign(ndim, 1.0);
  cfg.wave.order = order;
  cfg.wave.absorbing = a;
  cfg.wave.absorb_width = a == wave::Absorbing::kNone ? 0.0 : 0.25;
  cfg.wave.c_max = 2.5;
  cfg.wave.dt_obs = 0.02;
  cfg.wave.n_t = 30;
  cfg.f0 = 4.0;
  cfg.sources = {std::vector<double>(ndim, 0.3), std::vector<double>(ndim, 0.62)};
  cfg.receivers = {std::vector<double>(ndim, 0.8), std::vector<double>(ndim, 0.15),
                   std::vector<double>(ndim, 0.47)};
  cfg.receivers[1][0] = 0.9;
  return cfg;
}

fk::Tensor random_velocity(const fk::Dims& shape, uint64_t seed, fk::DType dt) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.6, 2.4);
  std::vector<double> v(shape.numel());
  for (double& x : v) x = u(rng);
  return fk::from_vector(v, shape).to(dt);
}

fk::Tensor random_like(const fk::Dims& shape, uint64_t seed, fk::DType dt) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n;
  std::vector<double> v(shape.numel());
  for (double& x : v) x = n(rng);
  return fk::from_vector(v, shape).to(dt);
}

double dot(const fk::Tensor& a, const fk::Tensor& b) {
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

// Gradient of <F(c), w> through the operator's backward.
fk::Tensor gradient(const WaveOperator& op, const fk::Tensor& c0, const fk::Tensor& w) {
  fk::Tensor c = c0.clone();
  c.set_requires_grad(true);
  const fk::Tensor out = op.apply(c);
  fk::autograd::backward({out}, {w});
  return c.grad();
}

// The lag (in samples, sub-sample by a parabola) that maximises the
// cross-correlation of b against a.
double correlation_lag(const std::vector<double>& a, const std::vector<double>& b) {
  const int n = static_cast<int>(a.size());
  std::vector<double> cc(2 * n - 1, 0.0);
  for (int lag = -(n - 1); lag < n; ++lag)
    for (int i = 0; i < n; ++i)
      if (i + lag >= 0 && i + lag < n) cc[lag + n - 1] += a[i] * b[i + lag];
  int best = 1;
  for (int k = 1; k + 1 < 2 * n - 1; ++k)
    if (cc[k] > cc[best]) best = k;
  const double y0 = cc[best - 1], y1 = cc[best], y2 = cc[best + 1];
  return best - (n - 1) + 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2);
}

// 1-D: the waveform travels unchanged, so the lag between two receivers is
// their distance / c (20 cells per wavelength at f0).
TEST(NefiWaveOperator, PulseTravelsAtTheWaveSpeed) {
  for (int order : {2, 4}) {
    WaveOperatorConfig cfg;
    const double c = 2.0, f0 = 2.0, L = 4.0;
    const int64_t n = 400;  // h = 0.01, λ_min ≈ c / (2.5 f0) = 0.4: 40 cells
    cfg.wave.extent = {L};
    cfg.wave.order = order;
    cfg.wave.absorbing = wave::Absorbing::kPml;
    cfg.wave.absorb_width = 0.5;
    cfg.wave.c_max = c;
    cfg.wave.dt_obs = 0.002;
    cfg.wave.n_t = 1400;
    cfg.f0 = f0;
    cfg.sources = {{0.5}};
    cfg.receivers = {{1.0}, {3.0}};
    const WaveOperator op(cfg, {n});
    const auto tr = op.apply(fk::full({n}, c, {fk::DType::F64})).to_vector<double>();
    const std::vector<double> a(tr.begin(), tr.begin() + 1400), b(tr.begin() + 1400, tr.end());
    const double speed = 2.0 / (correlation_lag(a, b) * cfg.wave.dt_obs);
    EXPECT_NEAR(speed / c, 1.0, 2e-3) << "order " << order;
  }
}

// Reflection = max |u_small − u_big| / max |u_big| at a receiver 0.2 λ from
// the layer (side) and at 0.2 λ from a corner, 20 cells per λ (c = f0 = 1).
std::pair<double, double> reflection(wave::Absorbing a, double width, int order = 4) {
  auto traces = [&](double L, wave::Absorbing layer, double w) {
    WaveOperatorConfig cfg;
    cfg.wave.extent = {L, L};
    cfg.wave.order = order;
    cfg.wave.absorbing = layer;
    cfg.wave.absorb_width = w;
    cfg.wave.c_max = 1.0;
    cfg.wave.dt_obs = 0.02;
    cfg.wave.n_t = 200;
    cfg.f0 = 1.0;
    const double m = L / 2;
    cfg.sources = {{m, m}};
    cfg.receivers = {{m + 0.8, m}, {m + 0.8, m + 0.8}};
    const int64_t n = static_cast<int64_t>(std::llround(L * 20));
    const WaveOperator op(cfg, {n, n});
    return op.apply(fk::full({n, n}, 1.0, {fk::DType::F64})).to_vector<double>();
  };
  const auto big = traces(7.0, wave::Absorbing::kNone, 0.0);  // walls 3.5 λ away
  const auto small = traces(2.0, a, width);
  double r[2];
  for (int k = 0; k < 2; ++k) {
    double diff = 0, peak = 0;
    for (int j = 0; j < 200; ++j) {
      diff = std::max(diff, std::abs(small[k * 200 + j] - big[k * 200 + j]));
      peak = std::max(peak, std::abs(big[k * 200 + j]));
    }
    r[k] = diff / peak;
  }
  return {r[0], r[1]};
}

TEST(NefiWaveOperator, AbsorbingLayersReflectLittle) {
  const auto [pml_side, pml_corner] = reflection(wave::Absorbing::kPml, 0.5);
  const auto [pml1_side, pml1_corner] = reflection(wave::Absorbing::kPml, 1.0);
  const auto [sponge_side, sponge_corner] = reflection(wave::Absorbing::kSponge, 1.5);
  const auto [cerjan_side, cerjan_corner] = reflection(wave::Absorbing::kCerjan, 1.5);
  // The reference: PML 0.5λ 0.11 % / 0.29 %, 1λ 0.01 % / 0.08 %; sponge 1.5λ
  // 1.3 % / 4.8 %; Cerjan 1.5λ 1.0 % / 3.2 %. Here (order 4): PML 0.5λ
  // 0.21 % / 0.69 %, 1λ 0.04 % / 0.03 %; sponge 1.5λ 2.0 % / 5.4 %; Cerjan
  // 1.5λ 2.8 % / 5.3 %.
  EXPECT_LT(pml_side, 4e-3);
  EXPECT_LT(pml_corner, 1e-2);
  EXPECT_LT(pml1_side, 1e-3);
  EXPECT_LT(pml1_corner, 1e-3);
  EXPECT_LT(sponge_side, 3e-2);
  EXPECT_LT(sponge_corner, 8e-2);
  EXPECT_LT(cerjan_side, 4e-2);
  EXPECT_LT(cerjan_corner, 8e-2);
  EXPECT_LT(pml_side, sponge_side);
  std::printf(
      "reflection side/corner: pml 0.5λ %.4f/%.4f, pml 1λ %.4f/%.4f, sponge 1.5λ "
      "%.4f/%.4f, cerjan 1.5λ %.4f/%.4f\n",
      pml_side, pml_corner, pml1_side, pml1_corner, sponge_side, sponge_corner, cerjan_side,
      cerjan_corner);
}

// Without damping and with a constant c the scheme is a polynomial in a
// symmetric matrix, so trace(B | source at A) = trace(A | source at B) when
// sources are injected with the transposed receiver weights.
TEST(NefiWaveOperator, SourceInjectionIsTheTransposedSampling) {
  WaveOperatorConfig cfg = small_config(2, wave::Absorbing::kNone, 4);
  cfg.sources = {{0.31, 0.58}, {0.77, 0.23}};
  cfg.receivers = cfg.sources;
  const WaveOperator op(cfg, {20, 18});
  const auto t = op.apply(fk::full({20, 18}, 2.0, {fk::DType::F64})).to_vector<double>();
  const int64_t n_t = cfg.wave.n_t;
  double peak = 0, worst = 0;
  for (int64_t j = 0; j < n_t; ++j) {
    const double ab = t[(0 * 2 + 1) * n_t + j], ba = t[(1 * 2 + 0) * n_t + j];
    peak = std::max(peak, std::abs(ab));
    worst = std::max(worst, std::abs(ab - ba));
  }
  EXPECT_GT(peak, 0);
  EXPECT_LT(worst, 1e-12 * peak);
}

// Directional derivative of <F(c), w> against a central difference (f64).
TEST(NefiWaveOperator, GradientMatchesFiniteDifferences) {
  struct Case {
    int ndim, order;
    wave::Absorbing a;
    fk::Dims shape;
  };
  const std::vector<Case> cases{{1, 4, wave::Absorbing::kPml, {24}},
                                {2, 4, wave::Absorbing::kPml, {12, 10}},
                                {2, 2, wave::Absorbing::kSponge, {12, 10}},
                                {2, 4, wave::Absorbing::kCerjan, {11, 12}},
                                {3, 2, wave::Absorbing::kSponge, {7, 6, 6}}};
  for (const Case& cs : cases) {
    WaveOperatorConfig cfg = small_config(cs.ndim, cs.a, cs.order);
    cfg.grad_mode = "checkpoint";
    const WaveOperator op(cfg, cs.shape);
    const fk::Tensor c = random_velocity(cs.shape, 11, fk::DType::F64);
    const fk::Tensor w = random_like(op.output_shape(cs.shape), 12, fk::DType::F64);
    const fk::Tensor dir = random_like(cs.shape, 13, fk::DType::F64);
    const double analytic = dot(gradient(op, c, w), dir);
    const double eps = 1e-5;
    const double fd =
        (dot(op.apply(fk::add(c, dir, eps)), w) - dot(op.apply(fk::sub(c, dir, eps)), w)) /
        (2 * eps);
    EXPECT_NEAR(analytic, fd, 1e-6 * std::abs(fd))
        << cs.shape.str() << " " << wave::absorbing_name(cs.a);
  }
}

// Checkpointing recomputes the same fields and runs the same adjoint: the
// gradients are bitwise equal, for k dividing N or not, f32 and f64.
TEST(NefiWaveOperator, CheckpointedGradientIsBitwiseTheFullMemoryOne) {
  for (fk::DType dt : {fk::DType::F32, fk::DType::F64}) {
    WaveOperatorConfig cfg = small_config(2, wave::Absorbing::kPml, 4);
    cfg.grad_mode = "full";
    const fk::Dims shape{12, 10};
    const WaveOperator full(cfg, shape);
    const fk::Tensor c = random_velocity(shape, 5, dt);
    const fk::Tensor w = random_like(full.output_shape(shape), 6, dt);
    const auto ref = gradient(full, c, w).to_vector<double>();
    const int64_t N = full.geometry().grid.n_steps();
    for (int64_t k : {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{0}, N}) {
      cfg.grad_mode = "checkpoint";
      cfg.checkpoint_every = k;
      const WaveOperator ck(cfg, shape);
      const auto got = gradient(ck, c, w).to_vector<double>();
      ASSERT_EQ(got.size(), ref.size());
      EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * sizeof(double)), 0)
          << "k " << k << " dtype " << fk::name(dt);
    }
  }
}

// Shots run in parallel and their κ gradients are summed in shot order: the
// traces and the gradient are bitwise the same at one thread and at three.
TEST(NefiWaveOperator, ResultsDoNotDependOnTheThreadCount) {
  WaveOperatorConfig cfg = small_config(2, wave::Absorbing::kPml, 4);
  cfg.sources.push_back({0.5, 0.5});
  const fk::Dims shape{12, 10};
  const WaveOperator op(cfg, shape);
  const fk::Tensor c = random_velocity(shape, 8, fk::DType::F32);
  const fk::Tensor w = random_like(op.output_shape(shape), 9, fk::DType::F32);
  const fk::test::ThreadCount threads(1);
  std::vector<float> out[2], grad[2];
  for (int t = 0; t < 2; ++t) {
    threads.set(t == 0 ? 1 : 3);
    out[t] = op.apply(c).to_vector<float>();
    grad[t] = gradient(op, c, w).to_vector<float>();
  }
  EXPECT_EQ(out[0], out[1]);
  EXPECT_EQ(grad[0], grad[1]);
}

// Saved bytes: full keeps n_src (N + 1) S values, checkpoint n_src ceil(N/k)
// (2 + n_ψ) S plus one block of (k + 1) S during the backward.
TEST(NefiWaveOperator, PeakMemoryFollowsTheCheckpointModel) {
  WaveOperatorConfig cfg = small_config(2, wave::Absorbing::kPml, 4);
  cfg.wave.n_t = 60;
  const fk::Dims shape{16, 16};
  const fk::Tensor c = random_velocity(shape, 2, fk::DType::F64);
  const fk::test::ThreadCount threads(1);  // one block buffer alive at a time
  int64_t peaks[2];
  for (int mode = 0; mode < 2; ++mode) {
    cfg.grad_mode = mode == 0 ? "full" : "checkpoint";
    const WaveOperator op(cfg, shape);
    const fk::Tensor w = random_like(op.output_shape(shape), 6, fk::DType::F64);
    fk::empty_cache();
    const int64_t before = fk::memory_stats().allocated;
    fk::reset_peak_memory();
    gradient(op, c, w);
    peaks[mode] = fk::memory_stats().peak - before;
    const auto& g = op.geometry().grid;
    const int64_t S = g.numel * 8, N = g.n_steps(), k = op.checkpoint_every();
    const int64_t model = mode == 0 ? 2 * (N + 1) * S : 2 * ((N + k - 1) / k) * 4 * S + (k + 1) * S;
    EXPECT_GE(peaks[mode], model);
    EXPECT_LT(peaks[mode], model + 64 * 1024) << cfg.grad_mode;
  }
  EXPECT_LT(peaks[1] * 2, peaks[0]);
}

// The saved trajectories are freed by the first backward; a second one
// through the same graph is an error, not a read of freed memory.
TEST(NefiWaveOperator, SavedStatesGoAfterTheBackward) {
  WaveOperatorConfig cfg = small_config(2, wave::Absorbing::kSponge, 2);
  cfg.grad_mode = "full";
  const fk::Dims shape{10, 10};
  const WaveOperator op(cfg, shape);
  fk::Tensor c = random_velocity(shape, 3, fk::DType::F64);
  c.set_requires_grad(true);
  const fk::Tensor out = op.apply(c);
  const fk::Tensor w = random_like(out.shape(), 4, fk::DType::F64);
  fk::empty_cache();
  const int64_t before = fk::memory_stats().allocated;
  fk::autograd::backward({out}, {w});
  EXPECT_LT(fk::memory_stats().allocated, before);
  EXPECT_THROW(fk::autograd::backward({out}, {w}), fk::Error);
}

TEST(NefiWaveOperator, BadInputIsAClearError) {
  WaveOperatorConfig cfg = small_config(2, wave::Absorbing::kPml, 4);
  const WaveOperator op(cfg, {12, 10});
  const std::string fast = error_of([&] { op.apply(fk::full({12, 10}, 2.6, {fk::DType::F64})); });
  EXPECT_NE(fast.find("c_max"), std::string::npos) << fast;
  EXPECT_NE(fast.find("2.6"), std::string::npos) << fast;
  EXPECT_THROW(op.apply(fk::full({12, 10}, 0.0, {fk::DType::F32})), fk::Error);
  EXPECT_THROW(op.apply(fk::full({10, 12}, 2.0, {fk::DType::F32})), fk::Error);
  EXPECT_THROW(op.apply(fk::full({12, 10}, 2, {fk::DType::I32})), fk::Error);
  auto bad = cfg;
  bad.receivers = {{0.5, 1.2}};
  const std::string outside = error_of([&] { WaveOperator(bad, {12, 10}); });
  EXPECT_NE(outside.find("receiver"), std::string::npos) << outside;
  bad = cfg, bad.sources.clear();
  EXPECT_THROW(WaveOperator(bad, {12, 10}), fk::Error);
  bad = cfg, bad.grad_mode = "autograd";
  EXPECT_THROW(WaveOperator(bad, {12, 10}), fk::Error);
  bad = small_config(3, wave::Absorbing::kPml, 2);
  EXPECT_THROW(WaveOperator(bad, {6, 6, 6}), fk::Error);
}

}  // namespace
