#include "nefi/solve/batch_blocks.h"

#include <algorithm>
#include <cstring>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"

namespace nefi {

std::vector<fk::Tensor> blocks_from_fields(const std::vector<InverseProblem>& problems,
                                           int64_t chunk) {
  const int64_t n = static_cast<int64_t>(problems.size());
  const int64_t P = problems.at(0).field->n_parameters();
  std::vector<fk::Tensor> blocks;
  for (int64_t b0 = 0; b0 < n; b0 += chunk) {
    const int64_t rows = std::min(chunk, n - b0);
    fk::Tensor params = fk::empty({rows, P}, {fk::DType::F32});
    for (int64_t k = 0; k < rows; ++k) {
      const Field& f = *problems[b0 + k].field;
      FK_CHECK(f.n_parameters() == P, "nefi::batch_invert blocks",
               fk::to_text(P) + " parameters in every field", fk::to_text(f.n_parameters()));
      std::memcpy(params.data<float>() + k * P, f.params().flat().data_ptr(),
                  static_cast<size_t>(P) * sizeof(float));
    }
    params.set_requires_grad(true);
    blocks.push_back(params);
  }
  return blocks;
}

void row_to_field(const float* row, Field& field) {
  fk::autograd::NoGradGuard ng;
  fk::Tensor flat = field.params().flat().detach();
  std::memcpy(flat.data_ptr(), row, static_cast<size_t>(field.n_parameters()) * sizeof(float));
  flat.bump_version();
}

void regrid_fields(std::vector<InverseProblem>& problems,
                   const std::function<const float*(int64_t)>& row, const Domain& domain) {
  for (size_t b = 0; b < problems.size(); ++b) {
    row_to_field(row(static_cast<int64_t>(b)), *problems[b].field);
    problems[b].field->on_stage_start(domain);
  }
}

FourierFeatures batch_features(int ndim, const NeuralField* mlp0) {
  if (!mlp0) return FourierFeatures(ndim, 0, true, false, {});
  const NeuralFieldConfig& c = mlp0->config();
  return FourierFeatures(ndim, c.n_octaves, c.include_input, c.annealed, c.periodic_axes);
}

}  // namespace nefi
