#include "nefi/field/heads.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
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
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&) const override {
    return r[0];
  }
  std::string kind() const override { return "identity"; }
  std::string signature() const override { return with_constants(*this, {v0}); }
};

struct SoftplusHead : Head {
  double v0, beta;
  SoftplusHead(std::string n, double v, double b) : Head(std::move(n)), v0(v), beta(b) {
    FK_CHECK(v > 0 && b > 0, "nefi::Softplus head", "init_value > 0 and beta > 0",
             std::to_string(v) + ", " + std::to_string(b));
  }
  std::vector<double> init_bias() const override { return {inv_softplus(v0, beta)}; }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&) const override {
    return fk::softplus(r[0], beta);
  }
  std::string kind() const override { return "softplus"; }
  std::string signature() const override { return with_constants(*this, {v0, beta}); }
};

struct ExpHead : Head {
  double v0;
  ExpHead(std::string n, double v) : Head(std::move(n)), v0(v) {
    FK_CHECK(v > 0, "nefi::Exp head", "init_value > 0", std::to_string(v));
  }
  std::vector<double> init_bias() const override { return {std::log(v0)}; }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&) const override {
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
             std::to_string(lo) + ", " + std::to_string(v0) + ", " + std::to_string(hi));
  }
  std::vector<double> init_bias() const override {
    if (log_scale) return {logit((std::log(v0) - std::log(lo)) / (std::log(hi) - std::log(lo)))};
    return {logit((v0 - lo) / (hi - lo))};
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&) const override {
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
             "init_value > 0 and 0 < gate_init < 1", std::to_string(v) + ", " + std::to_string(g));
  }
  int n_in() const override { return 2; }
  std::vector<double> init_bias() const override {
    return {inv_softplus(v0 / g0, beta), logit(g0)};
  }
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap&) const override {
    return fk::mul(fk::softplus(r[0], beta), fk::sigmoid(r[1]));
  }
  std::string kind() const override { return "gated_softplus"; }
  std::string signature() const override { return with_constants(*this, {v0, g0, beta}); }
};

struct ModifierHead : Head {
  HeadPtr inner;
  explicit ModifierHead(HeadPtr in) : Head(in->name()), inner(std::move(in)) {}
  int n_in() const override { return inner->n_in(); }
  std::vector<double> init_bias() const override { return inner->init_bias(); }
};

struct SupportMaskedHead : ModifierHead {
  std::string dep;
  double tau, fill;
  SupportMaskedHead(HeadPtr in, std::string d, double t, double f)
      : ModifierHead(std::move(in)), dep(std::move(d)), tau(t), fill(f) {}
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done) const override {
    fk::Tensor rho = support(done);
    return masked(inner->transform(r, done), fk::gt(rho, threshold(fk::amax(rho))));
  }
  // Row b's threshold is tau max(rho_b), made as the one-problem form's is:
  // the same mask bits.
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done) const override {
    fk::Tensor rho = support(done);
    std::vector<int64_t> rest;
    for (int64_t d = 1; d < rho.dim(); ++d) rest.push_back(d);
    const fk::Tensor thr_rows = threshold(fk::amax(rho, fk::Dims(rest), true));
    return masked(inner->transform_rows(r, done), fk::gt(rho, thr_rows));
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
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done) const override {
    fk::Tensor v = inner->transform(r, done);
    return fk::sub(v, fk::mean(v));
  }
  // Each row less its own mean (the rows are contiguous runs, folded as the
  // whole-field mean folds one field).
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done) const override {
    fk::Tensor v = inner->transform_rows(r, done);
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
  fk::Tensor transform(const std::vector<fk::Tensor>& r, const FieldMap& done) const override {
    return fk::add(fk::mul(inner->transform(r, done), a), b);
  }
  fk::Tensor transform_rows(const std::vector<fk::Tensor>& r, const FieldMap& done) const override {
    return fk::add(fk::mul(inner->transform_rows(r, done), a), b);
  }
  std::string kind() const override { return "affine"; }
  std::string signature() const override {
    return with_constants(*this, {a, b}) + "[" + inner->signature() + "]";
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
