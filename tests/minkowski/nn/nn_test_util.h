#pragma once
// Small random sparse tensors for the nn tests.
#include <cstdint>
#include <set>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"
#include "minkowski/sparse_tensor.h"

namespace minkowski::nn::testing {

// `n` distinct points per batch item in [0, extent)^dim (fewer if the box is
// small), `batches` items, features uniform in [-1, 1), fixed by `seed`.
inline SparseTensor random_sparse(int64_t n, int64_t channels, int dim, int extent,
                                  unsigned seed = 3, fk::DType dtype = fk::DType::F64,
                                  int batches = 1) {
  std::vector<int32_t> coords;
  const auto draws = fk::test::random_values(n * dim * batches * 4, 0.0, extent, seed);
  size_t next = 0;
  for (int b = 0; b < batches; ++b) {
    std::set<std::vector<int32_t>> seen;
    for (int64_t tries = 0; tries < n * 4 && static_cast<int64_t>(seen.size()) < n; ++tries) {
      std::vector<int32_t> p{b};
      for (int d = 0; d < dim; ++d) p.push_back(static_cast<int32_t>(draws[next++]));
      if (seen.insert(p).second) coords.insert(coords.end(), p.begin(), p.end());
    }
  }
  const int64_t rows = static_cast<int64_t>(coords.size()) / (dim + 1);
  const fk::Tensor c = fk::from_vector(coords, {rows, dim + 1});
  const fk::Tensor f = fk::test::random_tensor({rows, channels}, dtype, -1.0, 1.0, seed + 1);
  return SparseTensor(f, c);
}

}  // namespace minkowski::nn::testing
