#include "nefi/losses/band_limited_mse.h"

#include <cmath>
#include <map>
#include <mutex>
#include <numbers>
#include <string>
#include <tuple>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "nefi/params.h"

namespace nefi {
namespace {

struct BandLimitedMseLoss : Loss {
  double dt, f_cut;
  mutable std::mutex mu;
  // By (n_t, dtype, device): a device solve's filter is made in its eager
  // warm-up step, so a captured step copies nothing from the host.
  mutable std::map<std::tuple<int64_t, fk::DType, std::string>, fk::Tensor> filters;
  BandLimitedMseLoss(std::string n, double dt_, double fc)
      : Loss(std::move(n)), dt(dt_), f_cut(fc) {}
  fk::Tensor filter(int64_t n_t, fk::DType type, fk::Device device) const {
    std::lock_guard<std::mutex> lock(mu);
    fk::Tensor& m = filters[{n_t, type, device.str()}];
    if (!m.defined())
      m = fk::from_vector(lowpass_matrix(n_t, dt, f_cut), {n_t, n_t}).to(type).to(device);
    return m;
  }
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::DType type = c.pred.dtype();
    const int64_t n_t = c.pred.shape().back(), rows = c.pred.numel() / n_t;
    // M is symmetric, so filtering the rows is x Mᵀ = x M.
    const fk::Device device = c.pred.device();
    const fk::Tensor m = filter(n_t, type, device);
    const fk::Tensor p = fk::matmul(c.pred.reshape({rows, n_t}), m);
    const fk::Tensor y = fk::matmul(c.obs->data.to(type).to(device).reshape({rows, n_t}), m);
    fk::Tensor y2 = fk::square(y), r = fk::square(fk::sub(p, y));
    if (c.obs->mask.defined()) {
      const fk::Tensor w = c.obs->mask.to(type).to(device).reshape({rows, n_t});
      y2 = fk::mul(y2, w), r = fk::mul(r, w);
    }
    // On a device the denominator stays there (no host read, so the step can
    // be captured): zero energy gives a non-finite loss, as relative_mse's.
    if (device.is_cuda()) return fk::div(fk::sum(r), fk::sum(y2));
    const double denom = fk::sum(y2).item();
    FK_CHECK(denom > 0, "nefi::BandLimitedMSE", "observations with energy below f_cut", "none");
    return fk::div(fk::sum(r), denom);
  }
};

}  // namespace

std::vector<double> lowpass_matrix(int64_t n, double dt, double f_cut) {
  const int64_t L = 2 * n;
  std::vector<double> kernel(L, 0.0);  // kernel[d] = (1/L) Σ_k H_k cos(2π k d / L)
  for (int64_t k = 0; k < L; ++k) {
    const double f = static_cast<double>(std::min(k, L - k)) / (static_cast<double>(L) * dt);
    const double h = 1.0 / (1.0 + std::pow(f / f_cut, 8));
    for (int64_t d = 0; d < L; ++d)
      kernel[d] += h * std::cos(2 * std::numbers::pi * static_cast<double>(k * d % L) / L) / L;
  }
  std::vector<double> m(n * n);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < n; ++i) m[j * n + i] = kernel[std::abs(j - i)];
  return m;
}

LossPtr band_limited_mse_loss(double dt, double f_cut, std::string name) {
  FK_CHECK(dt > 0 && f_cut > 0, "nefi::BandLimitedMSE", "dt > 0 and f_cut > 0",
           Params::render(dt) + ", " + Params::render(f_cut));
  return std::make_shared<BandLimitedMseLoss>(std::move(name), dt, f_cut);
}

}  // namespace nefi
