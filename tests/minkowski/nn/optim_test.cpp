// Optimizers against an independent plain implementation (and a first step
// worked by hand), schedules at known points, clipping, and resuming from a
// saved optimizer state.
#include "minkowski/nn/optim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "fk/fk.h"
#include "minkowski/nn/schedule.h"

namespace minkowski::nn {
namespace {

constexpr fk::DType kF64 = fk::DType::F64;
const std::vector<double> kStart{1.0, -2.0, 0.5};
const std::vector<std::vector<double>> kGrads{{0.1, -0.3, 0.0}, {0.2, 0.1, -0.5}, {-0.4, 0.2, 0.3}};

fk::Tensor param(fk::DType t = kF64) {
  return fk::from_vector(kStart, {3}).to(t).set_requires_grad(true);
}

// Runs `opt` over the gradients of kGrads (set by hand on p).
std::vector<double> run(Optimizer& opt, fk::Tensor& p) {
  for (const auto& g : kGrads) {
    p.set_grad(fk::from_vector(g, {3}).to(p.dtype()));
    opt.step();
  }
  return p.to_vector<double>();
}

TEST(NnOptim, SgdFirstStepByHand) {
  fk::Tensor p = param();
  Sgd sgd({p}, {0.5, 0.9, 0.1, false});
  p.set_grad(fk::from_vector(kGrads[0], {3}));
  sgd.step();
  // p - lr (g + wd p): 1 - 0.5 (0.1 + 0.1) = 0.9; -2 - 0.5 (-0.3 - 0.2) = -1.75; 0.5 - 0.5 * 0.05.
  const auto v = p.to_vector<double>();
  EXPECT_NEAR(v[0], 0.9, 1e-15);
  EXPECT_NEAR(v[1], -1.75, 1e-15);
  EXPECT_NEAR(v[2], 0.475, 1e-15);
}

TEST(NnOptim, SgdMatchesAPlainRecurrence) {
  for (bool nesterov : {false, true}) {
    fk::Tensor p = param();
    Sgd sgd({p}, {0.1, 0.8, 0.05, nesterov});
    const auto got = run(sgd, p);
    std::vector<double> x = kStart, buf(3, 0.0);
    for (size_t s = 0; s < kGrads.size(); ++s) {
      for (int i = 0; i < 3; ++i) {
        const double g = kGrads[s][i] + 0.05 * x[i];
        buf[i] = s == 0 ? g : 0.8 * buf[i] + g;
        x[i] -= 0.1 * (nesterov ? g + 0.8 * buf[i] : buf[i]);
      }
    }
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], x[i], 1e-14) << nesterov << " " << i;
  }
}

TEST(NnOptim, AdamFirstStepIsLrTimesTheSign) {
  fk::Tensor p = param();
  Adam adam({p}, {0.01, 0.9, 0.999, 1e-12, 0.0, false});
  p.set_grad(fk::from_vector(std::vector<double>{0.1, -0.3, 2.0}, {3}));
  adam.step();
  const auto v = p.to_vector<double>();
  EXPECT_NEAR(v[0], 0.99, 1e-9);
  EXPECT_NEAR(v[1], -1.99, 1e-9);
  EXPECT_NEAR(v[2], 0.49, 1e-9);
}

TEST(NnOptim, AdamAndAdamWMatchAPlainRecurrence) {
  for (bool decoupled : {false, true}) {
    for (fk::DType t : {kF64, fk::DType::F32}) {
      fk::Tensor p = param(t);
      Adam adam({p}, {0.05, 0.8, 0.95, 1e-8, 0.1, decoupled});
      const auto got = run(adam, p);
      std::vector<double> x = kStart, m(3, 0.0), v(3, 0.0);
      for (size_t s = 0; s < kGrads.size(); ++s) {
        const double c1 = 1 - std::pow(0.8, s + 1.0), c2 = 1 - std::pow(0.95, s + 1.0);
        for (int i = 0; i < 3; ++i) {
          double g = kGrads[s][i];
          if (decoupled) {
            x[i] -= 0.05 * 0.1 * x[i];
          } else {
            g += 0.1 * x[i];
          }
          m[i] = 0.8 * m[i] + 0.2 * g;
          v[i] = 0.95 * v[i] + 0.05 * g * g;
          x[i] -= 0.05 * (m[i] / c1) / (std::sqrt(v[i] / c2) + 1e-8);
          if (t == fk::DType::F32) x[i] = static_cast<float>(x[i]);
        }
      }
      for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], x[i], t == kF64 ? 1e-14 : 1e-6);
    }
  }
}

TEST(NnOptim, ResumingFromSavedStateContinuesExactly) {
  fk::Tensor a = param(), b = param();
  Adam first({a}, {0.05, 0.8, 0.95, 1e-8, 0.0, false});
  Adam second({b}, {0.05, 0.8, 0.95, 1e-8, 0.0, false});
  for (int s = 0; s < 2; ++s) {
    a.set_grad(fk::from_vector(kGrads[s], {3}));
    first.step();
  }
  {
    fk::autograd::NoGradGuard no_grad;
    b.copy_(a);
  }
  second.load_state(first.state());
  EXPECT_EQ(second.steps(), 2);
  a.set_grad(fk::from_vector(kGrads[2], {3}));
  b.set_grad(fk::from_vector(kGrads[2], {3}));
  first.step();
  second.step();
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  Sgd sgd({a}, {0.1, 0.9, 0.0, false});
  EXPECT_THROW(sgd.load_state(first.state()), fk::Error);  // another optimizer's buffers
}

TEST(NnOptim, SkipsParametersWithoutGradientAndRejectsBadSettings) {
  fk::Tensor p = param();
  Sgd sgd({p}, {0.1, 0.0, 0.0, false});
  sgd.step();
  EXPECT_EQ(p.to_vector<double>(), kStart);
  EXPECT_THROW(Sgd({p}, {0.1, 0.0, 0.0, true}), fk::Error);
  EXPECT_THROW(Adam({p}, {0.1, 1.0, 0.9, 1e-8, 0.0, false}), fk::Error);
  EXPECT_THROW(Adam({p}, {0.1, 0.9, 0.9, 1e-8, -0.1, true}), fk::Error);
  EXPECT_THROW(Sgd({p}, {0.1, -0.5, 0.0, false}), fk::Error);
  EXPECT_THROW(Sgd({p}, {0.1, 0.5, -1e-4, false}), fk::Error);
  EXPECT_THROW(Sgd({fk::zeros({2}, {fk::DType::BF16})}, {}), fk::Error);
}

// Each parameter's bias correction counts the steps it took (torch's
// per-parameter step): b misses the first step, so its first update is the
// first-step one, lr times the gradient's sign.
TEST(NnOptim, AdamCountsEachParametersOwnSteps) {
  fk::Tensor a = param(), b = param();
  Adam adam({a, b}, {0.01, 0.9, 0.999, 1e-12, 0.0, false});
  a.set_grad(fk::from_vector(kGrads[1], {3}));
  adam.step();
  b.set_grad(fk::from_vector(std::vector<double>{0.1, -0.3, 2.0}, {3}));
  adam.step();
  EXPECT_EQ(adam.steps(), 2);
  EXPECT_EQ(adam.steps_of(0), 2);
  EXPECT_EQ(adam.steps_of(1), 1);
  const auto v = b.to_vector<double>();
  EXPECT_NEAR(v[0], 0.99, 1e-9);
  EXPECT_NEAR(v[1], -1.99, 1e-9);
  EXPECT_NEAR(v[2], 0.49, 1e-9);

  // The counts travel in the state; a state without them (written before
  // per-parameter counts) gives every parameter the optimizer's count.
  fk::Tensor c = param(), d = param();
  Adam resumed({c, d}, {0.01, 0.9, 0.999, 1e-12, 0.0, false});
  resumed.load_state(adam.state());
  EXPECT_EQ(resumed.steps_of(1), 1);
  NamedTensors old;
  for (auto& [name, t] : adam.state())
    if (!name.ends_with(".step") || name == "step") old.emplace_back(name, t);
  Adam legacy({c, d}, {0.01, 0.9, 0.999, 1e-12, 0.0, false});
  legacy.load_state(old);
  EXPECT_EQ(legacy.steps(), 2);
  EXPECT_EQ(legacy.steps_of(1), 2);
}

// Weight decay 0 adds nothing: an infinite parameter stays infinite (0 * inf
// would make it NaN), as in torch.
TEST(NnOptim, NoWeightDecayKeepsAnInfiniteParameter) {
  const double inf = std::numeric_limits<double>::infinity();
  auto infinite = [&] {
    return fk::from_vector(std::vector<double>{-inf, 1.0}, {2}).set_requires_grad(true);
  };
  fk::Tensor p = infinite(), q = infinite(), r = infinite();
  Sgd sgd({p}, {0.1, 0.0, 0.0, false});
  Adam adam({q}, {0.1, 0.9, 0.999, 1e-8, 0.0, false});
  Adam adamw({r}, {0.1, 0.9, 0.999, 1e-8, 0.0, true});
  for (fk::Tensor* t : {&p, &q, &r})
    t->set_grad(fk::from_vector(std::vector<double>{0.5, 0.5}, {2}));
  sgd.step();
  adam.step();
  adamw.step();
  for (fk::Tensor* t : {&p, &q, &r}) EXPECT_EQ(t->to_vector<double>()[0], -inf);
}

TEST(NnOptim, ClipGradNormScalesAllGradientsTogether) {
  fk::Tensor a = param(), b = param();
  a.set_grad(fk::from_vector(std::vector<double>{3, 0, 0}, {3}));
  b.set_grad(fk::from_vector(std::vector<double>{0, 4, 0}, {3}));
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, b}, 10.0), 5.0);
  EXPECT_EQ(a.grad().to_vector<double>()[0], 3.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, b}, 1.0), 5.0);
  EXPECT_NEAR(a.grad().to_vector<double>()[0], 0.6, 1e-6);
  EXPECT_NEAR(b.grad().to_vector<double>()[1], 0.8, 1e-6);
  // A non-finite total scales nothing: an infinite gradient stays the only
  // bad one, and finite ones whose squares overflow are not zeroed.
  const double inf = std::numeric_limits<double>::infinity();
  a.set_grad(fk::from_vector(std::vector<double>{inf, 1, 2}, {3}));
  EXPECT_EQ(clip_grad_norm({a}, 1.0), inf);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{inf, 1, 2}));
  b.set_grad(fk::from_vector(std::vector<double>{1e200, 1e200, 1}, {3}));
  EXPECT_EQ(clip_grad_norm({b}, 1.0), inf);
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1e200, 1e200, 1}));
  // A bound below 0 (it flipped every sign) or NaN (it turned clipping off)
  EXPECT_THROW(clip_grad_norm({b}, -1.0), fk::Error);
  EXPECT_THROW(clip_grad_norm({b}, std::nan("")), fk::Error);
}

// state() is a snapshot: a later step moves the optimizer, not the copy.
TEST(NnOptim, StateIsASnapshot) {
  fk::Tensor a = param();
  Adam adam({a}, {0.01, 0.9, 0.999, 1e-8, 0.0, false});
  a.set_grad(fk::from_vector(std::vector<double>{1, 2, 3}, {3}));
  adam.step();
  const NamedTensors after_one = adam.state();
  std::vector<std::vector<double>> values;
  for (const auto& [n, t] : after_one) values.push_back(t.to_vector<double>());
  adam.step();
  for (size_t i = 0; i < after_one.size(); ++i)
    EXPECT_EQ(after_one[i].second.to_vector<double>(), values[i]) << after_one[i].first;
  EXPECT_THROW(adam.set_lr(-1), fk::Error);
  EXPECT_THROW(adam.set_lr(std::numeric_limits<double>::infinity()), fk::Error);
  EXPECT_THROW(Sgd({a}, {std::numeric_limits<double>::infinity(), 0.0, 0.0, false}), fk::Error);
}

TEST(NnSchedule, KnownPoints) {
  LrSchedule s;
  s.base_lr = 0.1;
  s.total_steps = 110;
  s.warmup_steps = 10;
  s.warmup_start = 0.0;
  EXPECT_DOUBLE_EQ(s.at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.at(5), 0.05);
  EXPECT_DOUBLE_EQ(s.at(10), 0.1);
  s.kind = ScheduleKind::Cosine;
  s.min_lr = 0.01;
  EXPECT_NEAR(s.at(60), 0.055, 1e-15);
  EXPECT_NEAR(s.at(110), 0.01, 1e-15);
  EXPECT_NEAR(s.at(35), 0.01 + 0.09 * 0.5 * (1 + std::cos(std::numbers::pi / 4)), 1e-15);
  s.kind = ScheduleKind::Poly;
  s.power = 2.0;
  EXPECT_NEAR(s.at(60), 0.025, 1e-15);
  EXPECT_EQ(s.at(500), 0.0);
  s.kind = ScheduleKind::Step;
  s.step_size = 30;
  s.gamma = 0.5;
  EXPECT_NEAR(s.at(39), 0.1, 1e-15);
  EXPECT_NEAR(s.at(40), 0.05, 1e-15);
  EXPECT_NEAR(s.at(100), 0.0125, 1e-15);
  EXPECT_EQ(schedule_kind("cosine"), ScheduleKind::Cosine);
  EXPECT_THROW(schedule_kind("linear"), fk::Error);
  s.total_steps = 5;
  EXPECT_THROW(s.at(0), fk::Error);
  // Settings no schedule means: each refused by name.
  for (auto bad : {+[](LrSchedule& t) { t.gamma = -1; }, +[](LrSchedule& t) { t.base_lr = -1; },
                   +[](LrSchedule& t) { t.warmup_start = 2; }, +[](LrSchedule& t) { t.min_lr = 1; },
                   +[](LrSchedule& t) { t.power = 0; }}) {
    LrSchedule t;
    t.total_steps = 10;
    bad(t);
    EXPECT_THROW(t.at(0), fk::Error);
  }
}

}  // namespace
}  // namespace minkowski::nn
