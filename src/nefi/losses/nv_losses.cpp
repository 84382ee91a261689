#include "nefi/losses/nv_losses.h"

#include "fk/error.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "nefi/losses/observation_constants.h"

namespace nefi {
namespace {

// sum over the frequency axis of (..., n_freq, H, W).
fk::Tensor noise_map(const fk::Tensor& s, const char* who) {
  FK_CHECK(s.dim() >= 3, who, "spectra of shape (n_freq, H, W)", s.shape().str());
  return fk::sum(s, {s.dim() - 3});
}

// 1 / v of a 0-dim tensor, divided in f64 and rounded to v's dtype once: the
// bits the host's `fk::mul(t, 1.0 / v.item())` multiplies by, without the read.
fk::Tensor reciprocal_via_f64(const fk::Tensor& v) {
  const fk::Tensor v64 = v.to(fk::DType::F64);
  return fk::div(fk::scalar_like(v64, 1.0), v64).to(v.dtype());
}

// The observations in the prediction's dtype, on its device.
fk::Tensor observed_like(const LossContext& c) {
  return c.obs->data.to(c.pred.dtype()).to(c.pred.device());
}

// The observations in f64 on the host (check_observations reads them there).
fk::Tensor host_f64(const Measurement& m) {
  return m.data.to(fk::kCPU).to(fk::DType::F64);
}

// The refusals of degenerate observations: raised by the CPU forward, and by
// check_observations on the host ahead of a device run.
void require_noise_map_mean(double mean) {
  FK_CHECK(mean != 0, "nefi::NoiseMap", "data with a non-zero mean noise map", "mean 0");
}
void require_positive_noise_map(double max) {
  FK_CHECK(max > 0, "nefi::DirectDensity", "data with a positive noise map", "max <= 0");
}
void require_nonzero_data(double max_abs) {
  FK_CHECK(max_abs > 0, "nefi::ScaledRelativeMSE", "data with a non-zero value", "all zeros");
}

// The data-side constants below are made once per observation (see
// observation_constants.h). Their checks read the host, so forward runs them
// on the CPU only; on a device forward would give a non-finite value for a
// degenerate observation (as the device losses of loss_device.h do), so the
// solvers run the same checks through check_observations before a stage.
bool checks_on_host(const LossContext& c) {
  return c.pred.device().is_cpu();
}

struct NoiseMapLoss : Loss {
  using Loss::Loss;
  ObservationConstants data_side;  // {M_y / mean M_y}
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor mp = noise_map(c.pred, "nefi::NoiseMap");
    const fk::Tensor target = data_side.get(c.obs->data, {}, c.pred.dtype(), c.pred.device(), [&] {
      const fk::Tensor my = noise_map(observed_like(c), "nefi::NoiseMap");
      const fk::Tensor ym = fk::mean(my);
      if (checks_on_host(c)) require_noise_map_mean(ym.item());
      return std::vector<fk::Tensor>{fk::mul(my, reciprocal_via_f64(ym))};
    })[0];
    const fk::Tensor pn = fk::div(mp, fk::add(fk::mean(mp), 1e-12));
    return fk::mean(fk::square(fk::sub(pn, target)));
  }
  void check_observations(const Measurement& obs) const override {
    require_noise_map_mean(fk::mean(noise_map(host_f64(obs), "nefi::NoiseMap")).item());
  }
};

struct DirectDensityLoss : Loss {
  std::string field;
  ObservationConstants data_side;  // {M_y / max M_y}
  DirectDensityLoss(std::string f, std::string n) : Loss(std::move(n)), field(std::move(f)) {}
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& rho = c.field(field);
    const fk::Tensor target = data_side.get(c.obs->data, {}, rho.dtype(), rho.device(), [&] {
      const fk::Tensor my =
          noise_map(c.obs->data.to(rho.dtype()).to(rho.device()), "nefi::DirectDensity");
      const fk::Tensor ymax = fk::amax(my);
      if (rho.device().is_cpu()) require_positive_noise_map(ymax.item());
      return std::vector<fk::Tensor>{fk::mul(my, reciprocal_via_f64(ymax))};
    })[0];
    FK_CHECK(target.shape() == rho.shape(), "nefi::DirectDensity",
             "a noise map of the field's shape " + rho.shape().str(), target.shape().str());
    const fk::Tensor rn = fk::div(rho, fk::add(fk::amax(rho), 1e-12));
    return fk::mean(fk::square(fk::sub(rn, target)));
  }
  void check_observations(const Measurement& obs) const override {
    require_positive_noise_map(fk::amax(noise_map(host_f64(obs), "nefi::DirectDensity")).item());
  }
};

struct NormalizedL1Loss : Loss {
  std::string field;
  NormalizedL1Loss(std::string f, std::string n) : Loss(std::move(n)), field(std::move(f)) {}
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& rho = c.field(field);
    return fk::div(fk::mean(fk::abs(rho)), fk::add(fk::amax(fk::abs(rho)), 1e-12));
  }
};

struct ScaledRelativeMseLoss : Loss {
  using Loss::Loss;
  ObservationConstants data_side;  // {1 / s, y / s, sum (y / s)^2}
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const std::vector<fk::Tensor> k =
        data_side.get(c.obs->data, {}, c.pred.dtype(), c.pred.device(), [&] {
          const fk::Tensor y = observed_like(c);
          const fk::Tensor s = fk::amax(fk::abs(y));
          if (checks_on_host(c)) require_nonzero_data(s.item());
          const fk::Tensor inv_s = reciprocal_via_f64(s);
          const fk::Tensor ys = fk::mul(y, inv_s);
          return std::vector<fk::Tensor>{inv_s, ys, fk::sum(fk::square(ys))};
        });
    return fk::div(fk::sum(fk::square(fk::sub(fk::mul(c.pred, k[0]), k[1]))), k[2]);
  }
  void check_observations(const Measurement& obs) const override {
    require_nonzero_data(fk::amax(fk::abs(host_f64(obs))).item());
  }
};

}  // namespace

LossPtr scaled_relative_mse_loss(std::string name) {
  return std::make_shared<ScaledRelativeMseLoss>(std::move(name));
}
LossPtr noise_map_loss(std::string name) {
  return std::make_shared<NoiseMapLoss>(std::move(name));
}
LossPtr direct_density_loss(std::string field, std::string name) {
  return std::make_shared<DirectDensityLoss>(std::move(field), std::move(name));
}
LossPtr normalized_l1_loss(std::string field, std::string name) {
  return std::make_shared<NormalizedL1Loss>(std::move(field), std::move(name));
}

}  // namespace nefi
