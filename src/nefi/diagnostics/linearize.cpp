#include "nefi/diagnostics/linearize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"

namespace nefi::diagnostics {
namespace {

double max_abs(const Vec& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

}  // namespace

Linearization linearize(const Operator& op, const fk::Tensor& x) {
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64,
           "nefi::diagnostics::linearize", "an f32 or f64 field", x.str());
  Linearization L;
  const fk::Tensor x0 = x.detach().contiguous();
  const fk::DType dt = x0.dtype();
  const fk::Dims in_shape = x0.shape();
  fk::Tensor y0;
  {
    fk::autograd::NoGradGuard ng;
    y0 = op.apply(x0);
  }
  const fk::Dims out_shape = y0.shape();
  L.in_shape = in_shape;
  L.out_shape = out_shape;
  L.map.n = x0.numel();
  L.map.m = y0.numel();
  // The vectors cross as f64 host vectors; the products run on x's device.
  const fk::Device device = x0.device();
  auto tensor = [dt, device](const Vec& v, const fk::Dims& shape) {
    return fk::from_vector(v, shape).to(dt).to(device);
  };
  auto eval = [&op](const fk::Tensor& t) {
    fk::autograd::NoGradGuard ng;
    return op.apply(t).to_vector<double>();
  };
  if (op.linear()) {
    L.jvp_mode = "exact (linear operator)";
    L.map.apply = [=](const Vec& v) { return eval(tensor(v, in_shape)); };
  } else {
    L.jvp_mode = "central difference";
    const Vec xv = x0.to_vector<double>();
    const double eps = dt == fk::DType::F32 ? std::numeric_limits<float>::epsilon()
                                            : std::numeric_limits<double>::epsilon();
    const double scale = std::cbrt(eps) * (1 + max_abs(xv));
    const int64_t m = L.map.m;
    L.map.apply = [=](const Vec& v) {
      const double vmax = max_abs(v);
      if (vmax == 0) return Vec(m, 0.0);
      const double h = scale / vmax;
      Vec plus(xv.size()), minus(xv.size());
      for (size_t i = 0; i < xv.size(); ++i) {
        plus[i] = xv[i] + h * v[i];
        minus[i] = xv[i] - h * v[i];
      }
      Vec a = eval(tensor(plus, in_shape));
      const Vec b = eval(tensor(minus, in_shape));
      for (size_t i = 0; i < a.size(); ++i) a[i] = (a[i] - b[i]) / (2 * h);
      return a;
    };
  }
  L.map.adjoint = [&op, x0, out_shape, tensor](const Vec& u) {
    return op.vjp(x0, tensor(u, out_shape)).to_vector<double>();
  };
  return L;
}

}  // namespace nefi::diagnostics
