#include "nefi/field/heads.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <map>
#include <mutex>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"

namespace nefi {
namespace {

// Round-trip text of a constant (std::to_string keeps 6 decimals).
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string with_constants(const Head& h, std::initializer_list<double> values) {
  std::string s = h.kind() + ":" + h.name() + "(";
  for (double v : values) s += exact(v) + ",";
  return s + ")";
}

double logit(double p) {
  return std::log(p / (1.0 - p));
}
// Inverse of softplus_beta(h) = log(1 + exp(beta h)) / beta.
double inv_softplus(double v, double beta) {
  return v * beta > 20 ? v : std::log(std::expm1(beta * v)) / beta;
}

struct IdentityHead : Head {
  double v0;
  IdentityHead(std::string n, double v) : Head(std::move(n)), v0(v) {}
  std::vector<double> init_bias() const override { return {v0}; }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&, double) const override {
    return r[0];
  }
  std::string kind() const override { return "identity"; }
  std::string signature() const override { return with_constants(*this, {v0}); }
};

struct SoftplusHead : Head {
  double v0, beta;
  SoftplusHead(std::string n, double v, double b) : Head(std::move(n)), v0(v), beta(b) {
    FK_CHECK(v > 0 && b > 0, "nefi::Softplus head", "init_value > 0 and beta > 0",
             fk::to_text(v) + ", " + fk::to_text(b));
  }
  std::vector<double> init_bias() const override { return {inv_softplus(v0, beta)}; }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&, double) const override {
    return fk::softplus(r[0], beta);
  }
  std::string kind() const override { return "softplus"; }
  std::string signature() const override { return with_constants(*this, {v0, beta}); }
};

struct ExpHead : Head {
  double v0;
  ExpHead(std::string n, double v) : Head(std::move(n)), v0(v) {
    FK_CHECK(v > 0, "nefi::Exp head", "init_value > 0", fk::to_text(v));
  }
  std::vector<double> init_bias() const override { return {std::log(v0)}; }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&, double) const override {
    return fk::exp(r[0]);
  }
  std::string kind() const override { return "exp"; }
  std::string signature() const override { return with_constants(*this, {v0}); }
};

struct BoundedHead : Head {
  double lo, hi, v0;
  bool log_scale;
  BoundedHead(std::string n, double l, double h, double v, bool lg)
      : Head(std::move(n)), lo(l), hi(h), v0(v), log_scale(lg) {
    FK_CHECK(hi > lo && v0 > lo && v0 < hi && (!lg || lo > 0),
             lg ? "nefi::LogBounded head" : "nefi::Bounded head",
             "lo < init_value < hi" + std::string(lg ? " and lo > 0" : ""),
             fk::to_text(lo) + ", " + fk::to_text(v0) + ", " + fk::to_text(hi));
  }
  std::vector<double> init_bias() const override {
    if (log_scale) return {logit((std::log(v0) - std::log(lo)) / (std::log(hi) - std::log(lo)))};
    return {logit((v0 - lo) / (hi - lo))};
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&, double) const override {
    fk::Tensor s = fk::sigmoid(r[0]);
    if (log_scale) return fk::exp(fk::add(fk::mul(s, std::log(hi) - std::log(lo)), std::log(lo)));
    return fk::add(fk::mul(s, hi - lo), lo);
  }
  std::string kind() const override { return log_scale ? "log_bounded" : "bounded"; }
  std::string signature() const override { return with_constants(*this, {lo, hi, v0}); }
};

struct GatedSoftplusHead : Head {
  double v0, g0, beta;
  GatedSoftplusHead(std::string n, double v, double g, double b)
      : Head(std::move(n)), v0(v), g0(g), beta(b) {
    FK_CHECK(v > 0 && g > 0 && g < 1, "nefi::GatedSoftplus head",
             "init_value > 0 and 0 < gate_init < 1", fk::to_text(v) + ", " + fk::to_text(g));
  }
  int n_in() const override { return 2; }
  std::vector<double> init_bias() const override {
    return {inv_softplus(v0 / g0, beta), logit(g0)};
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&, double) const override {
    return fk::mul(fk::softplus(r[0], beta), fk::sigmoid(r[1]));
  }
  std::string kind() const override { return "gated_softplus"; }
  std::string signature() const override { return with_constants(*this, {v0, g0, beta}); }
};

// lo + (hi - lo) sigmoid(h / eps), eps falling geometrically with progress:
// early in the fit a soft interface passes gradient across it, late the
// field takes its two values.
struct LevelSetHead : Head {
  double lo, hi, v0, eps0, eps1, leak;
  LevelSetHead(std::string n, double l, double h, double v, double e0, double e1, double lk)
      : Head(std::move(n)), lo(l), hi(h), v0(v), eps0(e0), eps1(e1), leak(lk) {
    FK_CHECK(hi > lo && v0 > lo && v0 < hi && e0 > 0 && e1 > 0 && lk >= 0, "nefi::LevelSet head",
             "lo < init_value < hi, eps_start, eps_end > 0 and leak >= 0",
             exact(lo) + ", " + exact(v0) + ", " + exact(hi) + ", eps " + exact(e0) + " -> " +
                 exact(e1) + ", leak " + exact(lk));
  }
  double eps(double progress) const {
    return eps0 * std::pow(eps1 / eps0, std::clamp(progress, 0.0, 1.0));
  }
  std::vector<double> init_bias() const override { return {eps0 * logit((v0 - lo) / (hi - lo))}; }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&,
                       double progress) const override {
    const fk::Tensor z = fk::mul(r[0], 1.0 / eps(progress));
    fk::Tensor s = fk::sigmoid(z);
    // + leak (z - z): the same values, and a slope of at least leak where
    // the sigmoid is flat, so a cell that saturated on the wrong side
    // still feels the data (its exact slope there is 0 in f32).
    if (leak > 0) s = fk::add(s, fk::mul(fk::sub(z, z.detach()), leak));
    return fk::add(fk::mul(s, hi - lo), lo);
  }
  bool reads_progress() const override { return eps0 != eps1; }
  std::string kind() const override { return "level_set"; }
  std::string signature() const override {
    return with_constants(*this, {lo, hi, v0, eps0, eps1, leak});
  }
};

// sum_k v_k softmax(h / eps)_k over K raw channels, eps falling as
// LevelSet's: K phases whose interfaces sharpen as the fit goes on.
struct MultiPhaseHead : Head {
  std::vector<double> values;
  double v0, eps0, eps1, leak;
  MultiPhaseHead(std::string n, std::vector<double> v, double init, double e0, double e1, double lk)
      : Head(std::move(n)), values(std::move(v)), v0(init), eps0(e0), eps1(e1), leak(lk) {
    FK_CHECK(values.size() >= 2 && std::is_sorted(values.begin(), values.end()) &&
                 std::adjacent_find(values.begin(), values.end()) == values.end() &&
                 v0 > values.front() && v0 < values.back() && e0 > 0 && e1 > 0 && lk >= 0,
             "nefi::MultiPhase head",
             "2 or more ascending distinct values v_1 < init_value < v_K, eps_start, eps_end > 0 "
             "and leak >= 0",
             values.empty() ? std::string("no values")
                            : fk::to_text(values.size()) + " values from " + exact(values.front()) +
                                  " to " + exact(values.back()) + ", init " + exact(v0) + ", eps " +
                                  exact(e0) + " -> " + exact(e1) + ", leak " + exact(lk));
  }
  int n_in() const override { return static_cast<int>(values.size()); }
  double eps(double progress) const {
    return eps0 * std::pow(eps1 / eps0, std::clamp(progress, 0.0, 1.0));
  }
  // The most even shares that mix to v0: p_k ~ exp(lambda v_k), lambda
  // found by bisection (the mix rises with lambda); raw = eps_start lambda
  // v_k, the softmax's logits at progress 0. Every channel starts with a
  // share, so each can take cells (a start on two values only left the
  // others at a slope of exp(-138) by the end, 0 in f32).
  std::vector<double> init_bias() const override {
    const double span = values.back() - values.front();
    auto mix = [&](double lambda) {
      double num = 0, den = 0;
      for (double v : values) {
        const double w = std::exp(lambda * (v - values.back()));
        num += w * v;
        den += w;
      }
      return num / den;
    };
    double lo = -700 / span, hi = 700 / span;
    for (int it = 0; it < 200; ++it) {
      const double mid = 0.5 * (lo + hi);
      (mix(mid) < v0 ? lo : hi) = mid;
    }
    const double lambda = 0.5 * (lo + hi);
    std::vector<double> bias;
    for (double v : values) bias.push_back(eps0 * lambda * (v - values.front()));
    return bias;
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&,
                       double progress) const override {
    const int64_t d = r[0].dim();
    const double inv_eps = 1.0 / eps(progress);
    const fk::Tensor p = fk::softmax(fk::mul(fk::stack(r, d), inv_eps), d);
    // sum_k v_k p_k with the values as scalars: no host copy (which would
    // end a CUDA graph capture on a device).
    fk::Tensor out = fk::mul(p.select(d, 0), values[0]);
    for (size_t k = 1; k < values.size(); ++k)
      out = fk::add(out, fk::mul(p.select(d, static_cast<int64_t>(k)), values[k]));
    if (leak > 0) {
      // + leak sum_k (v_k - mean v) (z_k - z_k): the same values, and each
      // channel keeps a slope of leak |v_k - mean v| / eps where the softmax
      // is flat, so a cell that sharpened into the wrong phase can leave.
      double mean = 0;
      for (double v : values) mean += v / static_cast<double>(values.size());
      for (size_t k = 0; k < values.size(); ++k) {
        const fk::Tensor z = fk::mul(r[k], inv_eps);
        out = fk::add(out, fk::mul(fk::sub(z, z.detach()), leak * (values[k] - mean)));
      }
    }
    return out;
  }
  bool reads_progress() const override { return eps0 != eps1; }
  std::string kind() const override { return "multi_phase"; }
  std::string signature() const override {
    std::string s = with_constants(*this, {v0, eps0, eps1, leak});
    for (double v : values) {  // (append: GCC 12 warns on " " + string as a restrict overlap)
      s.push_back(' ');
      s.append(exact(v));
    }
    return s;
  }
};

struct ModifierHead : Head {
  HeadPtr inner;
  explicit ModifierHead(HeadPtr in) : Head(in->name()), inner(std::move(in)) {}
  int n_in() const override { return inner->n_in(); }
  std::vector<double> init_bias() const override { return inner->init_bias(); }
  bool reads_progress() const override { return inner->reads_progress(); }
};

struct SupportMaskedHead : ModifierHead {
  std::string dep;
  double tau, fill;
  SupportMaskedHead(HeadPtr in, std::string d, double t, double f)
      : ModifierHead(std::move(in)), dep(std::move(d)), tau(t), fill(f) {}
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done,
                       double progress) const override {
    fk::Tensor rho = support(done);
    return masked(inner->transform(r, done, progress), fk::gt(rho, threshold(fk::amax(rho))));
  }
  // Row b's threshold is tau max(rho_b), made as the one-problem form's is:
  // the same mask bits.
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done,
                            double progress) const override {
    fk::Tensor rho = support(done);
    std::vector<int64_t> rest;
    for (int64_t d = 1; d < rho.dim(); ++d) rest.push_back(d);
    const fk::Tensor thr_rows = threshold(fk::amax(rho, fk::Dims(rest), true));
    return masked(inner->transform_rows(r, done, progress), fk::gt(rho, thr_rows));
  }
  std::string kind() const override { return "support_masked"; }
  std::string signature() const override {
    return with_constants(*this, {tau, fill}) + " on " + dep + "[" + inner->signature() + "]";
  }

 private:
  // The dependency under stop-gradient: the support is a hard choice.
  fk::Tensor support(const FieldMap& done) const {
    auto it = done.find(dep);
    FK_CHECK(it != done.end(), "nefi::SupportMasked head",
             "a field '" + dep + "' declared before '" + name() + "'", "none");
    return it->second.detach();
  }
  // tau max, multiplied in f64 (exact from f32) and rounded once to the
  // field's dtype, where it stays: a device step reads nothing back.
  fk::Tensor threshold(const fk::Tensor& max) const {
    return fk::mul(max.to(fk::DType::F64), tau).to(max.dtype());
  }
  fk::Tensor masked(const fk::Tensor& v, const fk::Tensor& inside) const {
    fk::Tensor m = inside.to(v.dtype());
    if (fill == 0.0) return fk::mul(v, m);
    return fk::add(fk::mul(v, m), fk::mul(fk::sub(fk::ones_like(m), m), fill));
  }
};

struct ZeroMeanHead : ModifierHead {
  using ModifierHead::ModifierHead;
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done,
                       double progress) const override {
    fk::Tensor v = inner->transform(r, done, progress);
    return fk::sub(v, fk::mean(v));
  }
  // Each row less its own mean (the rows are contiguous runs, folded as the
  // whole-field mean folds one field).
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done,
                            double progress) const override {
    fk::Tensor v = inner->transform_rows(r, done, progress);
    std::vector<int64_t> rest;
    for (int64_t d = 1; d < v.dim(); ++d) rest.push_back(d);
    return fk::sub(v, fk::mean(v, fk::Dims(rest), true));
  }
  std::string kind() const override { return "zero_mean"; }
  std::string signature() const override { return kind() + "[" + inner->signature() + "]"; }
};

struct AffineHead : ModifierHead {
  double a, b;
  AffineHead(HeadPtr in, double s, double t) : ModifierHead(std::move(in)), a(s), b(t) {}
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done,
                       double progress) const override {
    return fk::add(fk::mul(inner->transform(r, done, progress), a), b);
  }
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done,
                            double progress) const override {
    return fk::add(fk::mul(inner->transform_rows(r, done, progress), a), b);
  }
  std::string kind() const override { return "affine"; }
  std::string signature() const override {
    return with_constants(*this, {a, b}) + "[" + inner->signature() + "]";
  }
};

// A known support: inner inside, fill outside (a soft mask blends them).
struct MaskedHead : ModifierHead {
  fk::Tensor mask;  // the field's shape, values in [0, 1], f64 on the host
  double fill;
  std::string digest;  // the mask's shape and an FNV-1a hash of its values
  MaskedHead(HeadPtr in, const fk::Tensor& m, double f) : ModifierHead(std::move(in)), fill(f) {
    FK_CHECK(m.defined() && fk::is_floating(m.dtype()), "nefi::Masked head",
             "a real mask of the field's shape", m.defined() ? fk::name(m.dtype()) : "none");
    mask = m.to(fk::kCPU).to(fk::DType::F64).contiguous().clone();
    const std::vector<double> v = mask.to_vector<double>();
    double sum = 0;
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < v.size(); ++i) {
      FK_CHECK(v[i] >= 0 && v[i] <= 1, "nefi::Masked head", "mask values in [0, 1]",
               exact(v[i]) + " at cell " + fk::to_text(i));
      sum += v[i];
      unsigned char bytes[sizeof(double)];
      std::memcpy(bytes, &v[i], sizeof bytes);
      for (unsigned char b : bytes) hash = (hash ^ b) * 1099511628211ull;
    }
    FK_CHECK(sum > 0, "nefi::Masked head", "a mask with some cell inside the support",
             "an all-zero mask");
    digest = m.shape().str() + "/" + std::to_string(hash);
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done,
                       double progress) const override {
    return apply(inner->transform(r, done, progress), false);
  }
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done,
                            double progress) const override {
    return apply(inner->transform_rows(r, done, progress), true);
  }
  std::string kind() const override { return "masked"; }
  std::string signature() const override {
    return with_constants(*this, {fill}) + " mask " + digest + "[" + inner->signature() + "]";
  }

 private:
  fk::Tensor apply(const fk::Tensor& v, bool rows) const {
    const fk::Dims field =
        rows ? fk::Dims(std::vector<int64_t>(v.shape().begin() + 1, v.shape().end())) : v.shape();
    FK_CHECK(field == mask.shape(), "nefi::Masked head '" + name() + "'",
             "a mask of the field's shape " + field.str(), mask.shape().str());
    const fk::Tensor m = mask_like(v);
    if (fill == 0.0) return fk::mul(v, m);
    return fk::add(fk::mul(v, m), fk::mul(fk::sub(fk::ones_like(m), m), fill));
  }
  // The mask on v's device in v's dtype, made once per pair: a step reads
  // it without a copy (a copy would also end a CUDA graph capture).
  fk::Tensor mask_like(const fk::Tensor& v) const {
    const std::string key = v.device().str() + "/" + fk::name(v.dtype());
    const std::lock_guard<std::mutex> lock(cache_mutex);
    fk::Tensor& m = cache[key];
    if (!m.defined()) m = mask.to(v.dtype()).to(v.device());
    return m;
  }
  mutable std::mutex cache_mutex;
  mutable std::map<std::string, fk::Tensor> cache;
};

// inner * M / sum(inner): the total is M whatever the network says (the
// inner head must keep the field positive).
struct MassNormalizedHead : ModifierHead {
  double mass;
  MassNormalizedHead(HeadPtr in, double m) : ModifierHead(std::move(in)), mass(m) {
    FK_CHECK(std::isfinite(m) && m > 0, "nefi::MassNormalized head", "a total mass > 0", exact(m));
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done,
                       double progress) const override {
    fk::Tensor v = inner->transform(r, done, progress);
    return fk::mul(fk::div(v, fk::sum(v)), mass);
  }
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done,
                            double progress) const override {
    fk::Tensor v = inner->transform_rows(r, done, progress);
    std::vector<int64_t> rest;
    for (int64_t d = 1; d < v.dim(); ++d) rest.push_back(d);
    return fk::mul(fk::div(v, fk::sum(v, fk::Dims(rest), true)), mass);
  }
  std::string kind() const override { return "mass_normalized"; }
  std::string signature() const override {
    return with_constants(*this, {mass}) + "[" + inner->signature() + "]";
  }
};

// The inner head on the mean of its raw channels' mirror images about each
// axis's middle: exactly symmetric for an elementwise inner head (every
// value head; a level set then stays two-valued), and on the raw channels
// the projection onto symmetric fields (its own adjoint).
struct SymmetricHead : ModifierHead {
  std::vector<int> axes;
  SymmetricHead(HeadPtr in, std::vector<int> a) : ModifierHead(std::move(in)), axes(std::move(a)) {
    FK_CHECK(!axes.empty(), "nefi::Symmetric head", "at least one axis", "none");
    for (size_t i = 0; i < axes.size(); ++i) {
      FK_CHECK(axes[i] >= 0 && axes[i] <= 2, "nefi::Symmetric head", "axes in 0..2",
               fk::to_text(axes[i]));
      for (size_t j = 0; j < i; ++j)
        FK_CHECK(axes[i] != axes[j], "nefi::Symmetric head", "each axis once",
                 "axis " + fk::to_text(axes[i]) + " twice");
    }
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done,
                       double progress) const override {
    return inner->transform(symmetrized(r, 0), done, progress);
  }
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done,
                            double progress) const override {
    return inner->transform_rows(symmetrized(r, 1), done, progress);
  }
  std::string kind() const override { return "symmetric"; }
  std::string signature() const override {
    std::string s = kind() + ":" + name() + "(";
    for (int a : axes) s += std::to_string(a) + ",";
    return s + ")[" + inner->signature() + "]";
  }

 private:
  std::vector<fk::Tensor> symmetrized(std::vector<fk::Tensor> raw, int64_t lead) const {
    for (fk::Tensor& v : raw)
      for (int a : axes) {
        const int64_t d = lead + a;
        FK_CHECK(d < v.dim(), "nefi::Symmetric head '" + name() + "'",
                 "a field with axis " + fk::to_text(a), v.shape().str());
        v = fk::mul(fk::add(v, fk::flip(v, {d})), 0.5);
      }
    return raw;
  }
};

}  // namespace

std::string Head::signature() const {
  std::string s = kind() + ":" + name() + "(";
  for (double v : init_bias()) s += exact(v) + ",";
  return s + ")";
}

HeadPtr identity_head(std::string n, double v) {
  return std::make_shared<IdentityHead>(n, v);
}
HeadPtr softplus_head(std::string n, double v, double b) {
  return std::make_shared<SoftplusHead>(n, v, b);
}
HeadPtr exp_head(std::string n, double v) {
  return std::make_shared<ExpHead>(n, v);
}
HeadPtr bounded_head(std::string n, double lo, double hi, double v) {
  return std::make_shared<BoundedHead>(n, lo, hi, v, false);
}
HeadPtr log_bounded_head(std::string n, double lo, double hi, double v) {
  return std::make_shared<BoundedHead>(n, lo, hi, v, true);
}
HeadPtr gated_softplus_head(std::string n, double v, double g, double b) {
  return std::make_shared<GatedSoftplusHead>(n, v, g, b);
}
HeadPtr support_masked_head(HeadPtr in, std::string dep, double tau, double fill) {
  return std::make_shared<SupportMaskedHead>(std::move(in), std::move(dep), tau, fill);
}
HeadPtr zero_mean_head(HeadPtr in) {
  return std::make_shared<ZeroMeanHead>(std::move(in));
}
HeadPtr affine_head(HeadPtr in, double s, double t) {
  return std::make_shared<AffineHead>(std::move(in), s, t);
}

HeadPtr level_set_head(std::string n, double lo, double hi, double v, double e0, double e1,
                       double leak) {
  return std::make_shared<LevelSetHead>(std::move(n), lo, hi, v, e0, e1, leak);
}
HeadPtr multi_phase_head(std::string n, std::vector<double> values, double v, double e0, double e1,
                         double leak) {
  return std::make_shared<MultiPhaseHead>(std::move(n), std::move(values), v, e0, e1, leak);
}
HeadPtr masked_head(HeadPtr in, fk::Tensor mask, double fill) {
  return std::make_shared<MaskedHead>(std::move(in), std::move(mask), fill);
}
HeadPtr mass_normalized_head(HeadPtr in, double mass) {
  return std::make_shared<MassNormalizedHead>(std::move(in), mass);
}
HeadPtr symmetric_head(HeadPtr in, std::vector<int> axes) {
  return std::make_shared<SymmetricHead>(std::move(in), std::move(axes));
}
bool heads_read_progress(const std::vector<HeadPtr>& heads) {
  for (const HeadPtr& h : heads)
    if (h->reads_progress()) return true;
  return false;
}

HeadPtr make_head(const std::string& kind, std::string name, double v0, double lo, double hi) {
  if (kind == "identity") return identity_head(name, v0);
  if (kind == "softplus") return softplus_head(name, v0);
  if (kind == "exp") return exp_head(name, v0);
  if (kind == "bounded") return bounded_head(name, lo, hi, v0);
  if (kind == "log_bounded") return log_bounded_head(name, lo, hi, v0);
  if (kind == "gated_softplus") return gated_softplus_head(name, v0);
  FK_CHECK(false, "nefi::make_head",
           "identity, softplus, exp, bounded, log_bounded or gated_softplus", kind);
  return nullptr;
}

std::vector<double> output_bias(const std::vector<HeadPtr>& heads) {
  std::vector<double> bias;
  for (const HeadPtr& h : heads)
    for (double v : h->init_bias()) bias.push_back(v);
  return bias;
}

}  // namespace nefi
