#pragma once
// The small fields the batched and grouped MLP tests stack into one (N, P)
// parameter block (field/batched_mlp_test.cpp, field/grouped_mlp_test.cpp,
// cuda/grouped_mlp_device_test.cpp): 2-D coordinates, depth 3 with the skip
// input at layer 2, 3 octaves, two heads (x identity, y softplus).
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/tensor.h"
#include "nefi/field/heads.h"
#include "nefi/field/neural_field.h"

namespace nefi::mlp_test {

inline NeuralFieldConfig mlp_config(int hidden, const std::string& activation = "tanh",
                                    std::optional<fk::DType> autocast = std::nullopt) {
  NeuralFieldConfig c;
  c.hidden = hidden;
  c.depth = 3;
  c.skip_at = 2;
  c.n_octaves = 3;
  c.activation = activation;
  c.autocast = autocast;
  return c;
}

inline std::shared_ptr<NeuralField> two_head_field(const NeuralFieldConfig& c, uint64_t seed) {
  return std::make_shared<NeuralField>(
      2, std::vector<HeadPtr>{identity_head("x"), softplus_head("y")}, c, seed);
}

// n fields of one configuration, seeds 7, 8, ...
inline std::vector<std::shared_ptr<NeuralField>> fields(int n, const NeuralFieldConfig& c) {
  std::vector<std::shared_ptr<NeuralField>> out;
  for (int b = 0; b < n; ++b) out.push_back(two_head_field(c, b + 7));
  return out;
}

// Their parameters as the rows of one (n, P) f32 leaf.
inline fk::Tensor stacked(const std::vector<std::shared_ptr<NeuralField>>& fs) {
  const int64_t P = fs[0]->n_parameters();
  fk::Tensor p = fk::empty({static_cast<int64_t>(fs.size()), P});
  for (size_t b = 0; b < fs.size(); ++b)
    std::memcpy(p.data<float>() + b * P, fs[b]->params().flat().data_ptr(), P * sizeof(float));
  p.set_requires_grad(true);
  return p;
}

}  // namespace nefi::mlp_test
