#include "nefi/field/axis_products.h"

#include <string>

#include "fk/error.h"
#include "fk/ops/linalg.h"
#include "fk/ops/view.h"

namespace nefi {

fk::Tensor axis_products(const fk::Tensor& x, const std::vector<fk::Tensor>& mats) {
  const int nd = static_cast<int>(mats.size());
  FK_CHECK(x.dim() == nd + 1, "nefi::axis_products",
           "x (C, " + std::to_string(nd) + " axes) for " + std::to_string(nd) + " matrices",
           x.shape().str());
  fk::Tensor y = x;
  for (int a = 1; a <= nd; ++a) {
    const fk::Tensor& m = mats[a - 1];
    if (!m.defined()) continue;
    FK_CHECK(m.dim() == 2 && m.size(1) == y.size(a), "nefi::axis_products",
             "matrix " + std::to_string(a - 1) + " of (n, " + std::to_string(y.size(a)) + ")",
             m.shape().str());
    // Move axis a last, multiply the rows, move it back.
    fk::Dims order, back = fk::Dims::filled(nd + 1, 0);
    for (int k = 0; k <= nd; ++k)
      if (k != a) order.push_back(k);
    order.push_back(a);
    for (int k = 0; k <= nd; ++k) back[static_cast<int>(order[k])] = k;
    const fk::Tensor last = fk::permute(y, order).contiguous();
    fk::Dims moved = last.shape();
    moved[nd] = m.size(0);
    const fk::Tensor r = fk::matmul(last.reshape({last.numel() / y.size(a), y.size(a)}), m.t());
    y = fk::permute(r.reshape(moved), back).contiguous();
  }
  return y;
}

}  // namespace nefi
