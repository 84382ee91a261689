#include "nefi/solve/weighted_rows.h"

#include <memory>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi {
namespace {

struct WeightedRowsBackward : fk::autograd::Node {
  std::vector<std::vector<double>> weights;  // [term][row]
  std::vector<fk::DType> dtypes;
  const char* name() const override { return "WeightedRowsBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::profile::OpScope scope("weighted_rows_backward");
    const std::vector<double> g = grads[0].to_vector<double>();
    std::vector<fk::Tensor> out;
    for (size_t i = 0; i < weights.size(); ++i) {
      std::vector<double> gi(g.size());
      for (size_t b = 0; b < g.size(); ++b) gi[b] = g[b] * weights[i][b];
      // Each term's gradient on its device (its edge's).
      out.push_back(
          next[i].fn ? fk::from_vector(gi, fk::Dims{static_cast<int64_t>(g.size())}, next[i].device)
                           .to(dtypes[i])
                     : fk::Tensor());
    }
    return out;
  }
};

}  // namespace

fk::Tensor weighted_rows(const std::vector<fk::Tensor>& terms,
                         const std::vector<std::vector<double>>& w) {
  fk::profile::OpScope scope("weighted_rows");
  FK_CHECK(!terms.empty() && terms[0].dim() == 1, "nefi::weighted_rows",
           "a 1-D first term (one value per problem)",
           terms.empty() ? std::string("no terms") : terms[0].shape().str());
  const int64_t n = terms[0].size(0);
  FK_CHECK(w.size() == terms.size(), "nefi::weighted_rows",
           fk::to_text(terms.size()) + " weight rows", fk::to_text(w.size()));
  std::vector<double> total(static_cast<size_t>(n), 0.0);
  fk::DType dt = fk::DType::F32;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::vector<double> v = terms[i].to_vector<double>();
    FK_CHECK(terms[i].dim() == 1 && terms[i].size(0) == n && w[i].size() == static_cast<size_t>(n),
             "nefi::weighted_rows", fk::to_text(n) + " values and weights per term",
             terms[i].shape().str() + " values and " + fk::to_text(w[i].size()) + " weights");
    for (int64_t b = 0; b < n; ++b) total[b] += w[i][b] * v[b];
    if (terms[i].dtype() == fk::DType::F64) dt = fk::DType::F64;
  }
  fk::Tensor out = fk::from_vector(total, fk::Dims{n}).to(dt);
  if (fk::autograd::any_needs_grad(terms)) {
    auto node = std::make_shared<WeightedRowsBackward>();
    node->weights = w;
    for (const auto& t : terms) node->dtypes.push_back(t.dtype());
    fk::autograd::record(node, terms, out);
  }
  return out;
}

}  // namespace nefi
