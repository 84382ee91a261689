#include "nefi/losses/band_limited_mse.h"

#include <cmath>
#include <map>
#include <mutex>
#include <numbers>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/linalg.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "nefi/losses/observation_constants.h"
#include "nefi/params.h"

namespace nefi {
namespace {

// The refusal of observations with no energy below f_cut: raised by the CPU
// forward, and by check_observations on the host ahead of a device run.
void require_band_energy(double sum_w_ym2) {
  FK_CHECK(sum_w_ym2 > 0, "nefi::BandLimitedMSE", "observations with energy below f_cut", "none");
}

struct BandLimitedMseLoss : Loss {
  double dt, f_cut;
  mutable std::mutex mu;
  mutable std::map<std::pair<int64_t, fk::DType>, fk::Tensor> filters;  // by (n_t, dtype)
  // {M on the prediction's device, the filtered data y M, the mask as (rows,
  // n_t) (undefined: none), sum w (y M)^2}: made once per observation.
  ObservationConstants data_side;
  BandLimitedMseLoss(std::string n, double dt_, double fc)
      : Loss(std::move(n)), dt(dt_), f_cut(fc) {}
  fk::Tensor filter(int64_t n_t, fk::DType type) const {
    std::lock_guard<std::mutex> lock(mu);
    fk::Tensor& m = filters[{n_t, type}];
    if (!m.defined()) m = fk::from_vector(lowpass_matrix(n_t, dt, f_cut), {n_t, n_t}).to(type);
    return m;
  }
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::DType type = c.pred.dtype();
    const fk::Device device = c.pred.device();
    const int64_t n_t = c.pred.shape().back(), rows = c.pred.numel() / n_t;
    const fk::Tensor& mask = c.obs->mask;
    const std::vector<fk::Tensor> k = data_side.get(c.obs->data, mask, type, device, [&] {
      // M is symmetric, so filtering the rows is x Mᵀ = x M.
      const fk::Tensor m = filter(n_t, type).to(device);
      const fk::Tensor y = fk::matmul(c.obs->data.to(type).to(device).reshape({rows, n_t}), m);
      fk::Tensor y2 = fk::square(y), w;
      if (mask.defined()) {
        w = mask.to(type).to(device).reshape({rows, n_t});
        y2 = fk::mul(y2, w);
      }
      const fk::Tensor denom = fk::sum(y2);
      // The check reads the host: on the CPU only (a device solve makes it
      // through check_observations before the stage).
      if (device.is_cpu()) require_band_energy(denom.item());
      return std::vector<fk::Tensor>{m, y, w, denom};
    });
    const fk::Tensor p = fk::matmul(c.pred.reshape({rows, n_t}), k[0]);
    fk::Tensor r = fk::square(fk::sub(p, k[1]));
    if (k[2].defined()) r = fk::mul(r, k[2]);
    return fk::div(fk::sum(r), k[3]);
  }
  void check_observations(const Measurement& obs) const override {
    const fk::Tensor y = obs.data.to(fk::kCPU).to(fk::DType::F64);
    const int64_t n_t = y.shape().back(), rows = y.numel() / n_t;
    fk::Tensor y2 = fk::square(fk::matmul(y.reshape({rows, n_t}), filter(n_t, fk::DType::F64)));
    if (obs.mask.defined()) {
      const fk::Tensor w = obs.mask.to(fk::kCPU).to(fk::DType::F64).reshape({rows, n_t});
      // The filter runs along time before the mask: they commute only when
      // each trace's weight is one value (a time-varying one weighted
      // filtered samples by the raw mask, silently).
      const std::vector<double> v = w.contiguous().to_vector<double>();
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 1; t < n_t; ++t)
          FK_CHECK(v[r * n_t + t] == v[r * n_t], "nefi::BandLimitedMSE",
                   "a mask constant along time in each trace (a muted pair)",
                   "trace " + fk::to_text(r) + " weighted " + fk::to_text(v[r * n_t]) +
                       " at time 0 and " + fk::to_text(v[r * n_t + t]) + " at time " +
                       fk::to_text(t));
      y2 = fk::mul(y2, w);
    }
    require_band_energy(fk::sum(y2).item());
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
