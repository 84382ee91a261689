#include "nefi/byop/custom_prior.h"

#include <cctype>
#include <cmath>
#include <map>
#include <mutex>
#include <utility>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/profile.h"
#include "nefi/byop/prior.h"
#include "nefi/operators/function_operator.h"

namespace nefi {
namespace {

std::mutex g_mu;
std::map<std::string, PenaltyFunction>& registry() {
  static std::map<std::string, PenaltyFunction> terms;
  return terms;
}

PenaltyFunction find(const std::string& name) {
  const std::lock_guard<std::mutex> lock(g_mu);
  const auto it = registry().find(name);
  return it == registry().end() ? PenaltyFunction{} : it->second;
}

struct CustomPenaltyBackward : fk::autograd::Node {
  fk::Tensor grad;  // dP/dx in x's dtype and device
  const char* name() const override { return "CustomPenaltyBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    return {fk::mul(grad, grads[0])};
  }
};

class CustomPenaltyLoss : public Loss {
 public:
  CustomPenaltyLoss(std::string term, PenaltyFunction f, std::string field, std::string name)
      : Loss(std::move(name)), term_(std::move(term)), f_(std::move(f)), field_(std::move(field)) {}

  fk::Tensor forward(const LossContext& ctx) const override {
    const fk::Tensor& x = ctx.field(field_);
    const std::string who = "prior term '" + term_ + "'";
    const fk::Tensor x64 = x.detach().to(fk::kCPU).to(fk::DType::F64).contiguous().clone();
    const bool grad = fk::autograd::any_needs_grad({x});
    fk::Tensor g;
    double v = 0;
    {
      fk::autograd::NoGradGuard ng;
      fk::profile::OpScope scope("custom_prior");
      v = f_(x64, grad ? &g : nullptr);
    }
    FK_CHECK(std::isfinite(v), who, "a finite value", fk::to_text(v));
    fk::Tensor out = fk::full({}, v, {x.dtype()}).to(x.device());
    if (grad) {
      FK_CHECK(g.defined() && same_long_axes(g.shape(), x.shape()) && fk::is_floating(g.dtype()),
               who, "a real gradient of the field's shape " + x.shape().str(),
               g.defined() ? std::string(fk::name(g.dtype())) + " " + g.shape().str()
                           : std::string("none"));
      auto node = std::make_shared<CustomPenaltyBackward>();
      node->grad = g.to(fk::kCPU).to(x.dtype()).contiguous().reshape(x.shape()).to(x.device());
      fk::autograd::record(node, {x}, out);
    }
    return out;
  }

 private:
  std::string term_;
  PenaltyFunction f_;
  std::string field_;
};

}  // namespace

void register_prior_term(const std::string& name, PenaltyFunction f) {
  bool well_formed = !name.empty() && std::islower(static_cast<unsigned char>(name[0]));
  for (char c : name)
    well_formed = well_formed && (std::islower(static_cast<unsigned char>(c)) ||
                                  std::isdigit(static_cast<unsigned char>(c)) || c == '_');
  FK_CHECK(well_formed, "register_prior",
           "a name of lower-case letters, digits and '_', starting with a letter",
           "'" + name + "'");
  FK_CHECK(!is_builtin_prior_term(name), "register_prior", "a name no built-in term has",
           "'" + name + "' (built in)");
  FK_CHECK(static_cast<bool>(f), "register_prior", "a penalty function", "none");
  const std::lock_guard<std::mutex> lock(g_mu);
  std::swap(registry()[name], f);  // a replaced function is destroyed with f, after the lock
}

bool unregister_prior_term(const std::string& name) {
  PenaltyFunction gone;  // destroyed after the lock is released (a Python
                         // function's deleter takes the GIL)
  const std::lock_guard<std::mutex> lock(g_mu);
  const auto it = registry().find(name);
  if (it == registry().end()) return false;
  gone = std::move(it->second);
  registry().erase(it);
  return true;
}

bool is_registered_prior_term(const std::string& name) {
  return static_cast<bool>(find(name));
}

std::vector<std::string> registered_prior_terms() {
  const std::lock_guard<std::mutex> lock(g_mu);
  std::vector<std::string> out;
  for (const auto& [name, f] : registry()) out.push_back(name);
  return out;
}

LossPtr custom_penalty_loss(const std::string& term, const std::string& field,
                            const std::string& name) {
  PenaltyFunction f = find(term);
  FK_CHECK(static_cast<bool>(f), "prior", "a registered term", "'" + term + "'");
  return std::make_shared<CustomPenaltyLoss>(term, std::move(f), field, name);
}

}  // namespace nefi
