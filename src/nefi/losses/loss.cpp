#include "nefi/losses/loss.h"

#include "fk/error.h"
#include "fk/ops/binary.h"

namespace nefi {

const fk::Tensor& LossContext::field(const std::string& name) const {
  auto it = fields->find(name);
  FK_CHECK(
      it != fields->end(), "nefi::Loss", "a field named '" + name + "'",
      fields->empty() ? std::string("no fields") : "fields " + fields->begin()->first + ", ...");
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
  for (const Term& t : terms_) {
    if (t.weight == 0.0) {
      v.components.emplace_back();
      continue;
    }
    fk::Tensor c = t.loss->forward(ctx);
    v.components.push_back(c);
    fk::Tensor wc = t.weight == 1.0 ? c : fk::mul(c, t.weight);
    v.total = v.total.defined() ? fk::add(v.total, wc) : wc;
  }
  FK_CHECK(v.total.defined(), "nefi::LossSet", "at least one term with a non-zero weight", "none");
  return v;
}

double LossSet::data_loss(const std::vector<double>& comps) const {
  double s = 0;
  for (size_t i = 0; i < terms_.size() && i < comps.size(); ++i)
    if (terms_[i].loss->is_data()) s += comps[i];
  return s;
}

}  // namespace nefi
