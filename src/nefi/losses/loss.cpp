#include "nefi/losses/loss.h"

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/profile.h"
#include "nefi/scalar.h"

namespace nefi {
namespace {

// total = sum_i w_i c_i over 0-dim terms as one op, and one op back (the
// plain chain is a mul, an add and a scalar fill per term, both ways).
// A host scalar moved to d (terms on a device get their gradients there).
fk::Tensor on(const fk::Tensor& t, fk::Device d) {
  return d.is_cpu() ? t : t.to(d);
}

struct WeightedSumBackward : fk::autograd::Node {
  std::vector<double> weights;
  std::vector<fk::DType> dtypes;
  std::vector<fk::Device> devices;
  const char* name() const override { return "WeightedSumBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("weighted_sum_backward");
    if (grads[0].device().is_cuda()) return apply_on_device(grads[0]);
    const double g = scalar_value(grads[0]);
    std::vector<fk::Tensor> out;
    for (size_t i = 0; i < weights.size(); ++i)
      out.push_back(next[i].fn ? on(make_scalar(g * weights[i], dtypes[i]), devices[i])
                               : fk::Tensor());
    return out;
  }
  // The same g * w_i (f64, rounded to each term's dtype once) without a host
  // read, so a device step stays capturable as one CUDA graph.
  std::vector<fk::Tensor> apply_on_device(const fk::Tensor& g) const {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor g64 = g.to(fk::DType::F64);
    std::vector<fk::Tensor> out;
    for (size_t i = 0; i < weights.size(); ++i)
      out.push_back(next[i].fn ? fk::mul(g64, weights[i]).to(dtypes[i]) : fk::Tensor());
    return out;
  }
};

// weighted_sum's value on the terms' CUDA device: the host loop's f64
// products and sums, in its order, as device ops (no host read).
fk::Tensor weighted_total_on_device(const std::vector<fk::Tensor>& terms,
                                    const std::vector<double>& w, fk::DType dt) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor total = fk::zeros(fk::Dims{}, {fk::DType::F64, terms.front().device()});
  for (size_t i = 0; i < terms.size(); ++i)
    total = fk::add(total, fk::mul(terms[i].detach().to(fk::DType::F64), w[i]));
  return total.to(dt);
}

fk::Tensor weighted_sum(const std::vector<fk::Tensor>& terms, const std::vector<double>& w) {
  fk::profile::OpScope scope("weighted_sum");
  fk::DType dt = fk::DType::F32;
  for (const fk::Tensor& t : terms)
    if (t.dtype() == fk::DType::F64) dt = fk::DType::F64;
  fk::Tensor out;
  if (terms.front().device().is_cuda()) {
    out = weighted_total_on_device(terms, w, dt);
  } else {
    double total = 0;
    for (size_t i = 0; i < terms.size(); ++i) total += w[i] * scalar_value(terms[i]);
    out = make_scalar(total, dt);
  }
  if (fk::autograd::any_needs_grad(terms)) {
    auto node = std::make_shared<WeightedSumBackward>();
    node->weights = w;
    for (const auto& t : terms) {
      node->dtypes.push_back(t.dtype());
      node->devices.push_back(t.device());
    }
    fk::autograd::record(node, terms, out);
  }
  return out;
}

}  // namespace

const fk::Tensor& LossContext::field(const std::string& name) const {
  auto it = fields->find(name);
  FK_CHECK(
      it != fields->end(), "nefi::Loss", "a field named '" + name + "'",
      fields->empty() ? std::string("no fields") : "fields " + fields->begin()->first + ", ...");
  return it->second;
}

const fk::Tensor& BatchLossContext::field(const std::string& name) const {
  auto it = fields->find(name);
  FK_CHECK(it != fields->end(), "nefi::Loss", "a field named '" + name + "'", "none");
  return it->second;
}

void LossSet::add(LossPtr loss, double weight) {
  FK_CHECK(loss != nullptr, "nefi::LossSet::add", "a loss", "null");
  for (const Term& t : terms_)
    FK_CHECK(t.loss->name() != loss->name(), "nefi::LossSet::add", "unique loss names",
             "a second '" + loss->name() + "'");
  terms_.push_back({std::move(loss), weight});
}

LossSet LossSet::with_weights(const std::map<std::string, double>& overrides) const {
  LossSet out = *this;
  for (const auto& [name, w] : overrides) {
    bool found = false;
    std::string names;
    for (Term& t : out.terms_) {
      names += (names.empty() ? "" : ", ") + t.loss->name();
      if (t.loss->name() == name) {
        t.weight = w;
        found = true;
      }
    }
    FK_CHECK(found, "nefi::LossSet::with_weights", "one of the losses " + names, name);
  }
  return out;
}

LossSet::Value LossSet::forward(const LossContext& ctx) const {
  Value v;
  std::vector<fk::Tensor> active;
  std::vector<double> weights;
  for (const Term& t : terms_) {
    if (t.weight == 0.0) {
      v.components.emplace_back();
      continue;
    }
    fk::Tensor c = t.loss->forward(ctx);
    FK_CHECK(c.numel() == 1, "nefi::LossSet", "a scalar from loss '" + t.loss->name() + "'",
             c.shape().str());
    v.components.push_back(c);
    active.push_back(c.dim() == 0 ? c : c.reshape(fk::Dims{}));
    weights.push_back(t.weight);
  }
  FK_CHECK(!active.empty(), "nefi::LossSet", "at least one term with a non-zero weight", "none");
  v.total = (active.size() == 1 && weights[0] == 1.0) ? active[0] : weighted_sum(active, weights);
  return v;
}

double LossSet::data_loss(const std::vector<double>& comps) const {
  double s = 0;
  for (size_t i = 0; i < terms_.size() && i < comps.size(); ++i)
    if (terms_[i].loss->is_data()) s += comps[i];
  return s;
}

void LossSet::check_observations(const Measurement& obs, const std::string& where,
                                 const std::string& whose) const {
  check_mask(obs, where, whose);
  for (const Term& t : terms_) {
    if (t.weight == 0.0) continue;
    try {
      t.loss->check_observations(obs);
    } catch (const fk::Error& e) {
      if (whose.empty() || e.where().empty()) throw;
      throw fk::Error(e.where(), e.expected(), e.given() + " in " + whose);
    }
  }
}

bool LossSet::reads_progress() const {
  for (const Term& t : terms_)
    if (t.weight != 0 && t.loss->reads_progress()) return true;
  return false;
}

}  // namespace nefi
