#include "nefi/field/parametric_device.h"

#include <string>

#include "fk/error.h"
#include "fk/ops/binary.h"
#include "fk/ops/copy.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"

namespace nefi {

fk::Tensor parametric_shapes_ops(const fk::Tensor& coords, const fk::Tensor& shapes,
                                 const fk::Tensor& background, const fk::Tensor& inv_2eps) {
  constexpr const char* kOp = "nefi::parametric_shapes_ops";
  FK_CHECK(coords.dim() == 2 && coords.size(1) >= 1 && coords.size(1) <= 3, kOp,
           "coordinates (N, d) with d in 1..3", coords.shape().str());
  const int64_t n = coords.size(0), d = coords.size(1);
  FK_CHECK(shapes.dim() == 3 && shapes.size(2) == 1 + d + d * d, kOp,
           "shapes (C, K, " + std::to_string(1 + d + d * d) + ") (blobs or ellipses)",
           shapes.shape().str());
  const int64_t C = shapes.size(0), K = shapes.size(1);
  FK_CHECK(background.dim() == 1 && background.size(0) == C, kOp,
           "a background of " + std::to_string(C) + " channels", background.shape().str());
  FK_CHECK(coords.device() == shapes.device() && background.device() == shapes.device() &&
               coords.dtype() == shapes.dtype() && background.dtype() == shapes.dtype(),
           kOp, "coordinates, shapes and background of one dtype on one device",
           std::string(fk::name(coords.dtype())) + " on " + coords.device().str() + ", " +
               fk::name(shapes.dtype()) + " on " + shapes.device().str() + ", " +
               fk::name(background.dtype()) + " on " + background.device().str());
  FK_CHECK(!inv_2eps.defined() || (inv_2eps.dim() == 0 && inv_2eps.device() == shapes.device() &&
                                   inv_2eps.dtype() == shapes.dtype()),
           kOp, "an ellipses' 1 / (2 eps) of 0 dims in the shapes' dtype and device",
           inv_2eps.defined() ? inv_2eps.shape().str() + " " + fk::name(inv_2eps.dtype()) + " on " +
                                    inv_2eps.device().str()
                              : std::string("none"));
  const fk::Tensor alpha = fk::select(shapes, 2, 0);  // (C, K)
  const fk::Tensor m = fk::narrow(shapes, 2, 1, d);   // (C, K, d)
  const fk::Tensor M = fk::reshape(fk::narrow(shapes, 2, 1 + d, d * d), {C * K, d, d});
  // diff (C K, N, d) = x - m, then u = sum_l diff_l M_l (row l of M), the
  // CPU op's order of sums.
  const fk::Tensor diff =
      fk::sub(fk::unsqueeze(coords, 0), fk::reshape(m, {C * K, 1, d}));  // broadcast over N
  fk::Tensor u;
  for (int64_t l = 0; l < d; ++l) {
    const fk::Tensor term = fk::mul(fk::narrow(diff, 2, l, 1), fk::narrow(M, 1, l, 1));
    u = l == 0 ? term : fk::add(u, term);
  }
  const fk::Tensor q = fk::sum(fk::mul(u, u), {2});  // (C K, N)
  const fk::Tensor g = inv_2eps.defined() ? fk::sigmoid(fk::mul(fk::neg(fk::sub(q, 1.0)), inv_2eps))
                                          : fk::exp(fk::mul(q, -0.5));
  // sinh(alpha) = (expm1(alpha) - expm1(-alpha)) / 2, each shape's amplitude
  // (expm1: no cancellation for small alpha).
  const fk::Tensor a = fk::mul(fk::sub(fk::expm1(alpha), fk::expm1(fk::neg(alpha))), 0.5);
  const fk::Tensor shaped = fk::mul(fk::reshape(g, {C, K, n}), fk::unsqueeze(a, 2));
  const fk::Tensor raw = fk::add(fk::sum(shaped, {1}), fk::unsqueeze(background, 1));  // (C, N)
  return fk::contiguous(fk::transpose(raw, 0, 1));
}

}  // namespace nefi
