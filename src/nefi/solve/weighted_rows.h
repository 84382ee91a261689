#pragma once
// weighted_rows: total[b] = sum_i w[i][b] terms_i[b] over (N) per-problem
// loss terms, as LossSet's weighted sum does for one problem with problem
// b's weights (double accumulation, rounded to the terms' dtype: f64 when
// any term is f64, else f32). batch_invert's shared loss mode reduces a
// whole block's terms with it, one op each way; backward hands term i the
// rows w[i][b] g[b].
#include <vector>

#include "fk/tensor.h"

namespace nefi {

fk::Tensor weighted_rows(const std::vector<fk::Tensor>& terms,
                         const std::vector<std::vector<double>>& w);

}  // namespace nefi
