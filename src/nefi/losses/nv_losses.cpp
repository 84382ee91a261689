#include "nefi/losses/nv_losses.h"

#include "fk/error.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"

namespace nefi {
namespace {

// sum over the frequency axis of (..., n_freq, H, W).
fk::Tensor noise_map(const fk::Tensor& s, const char* who) {
  FK_CHECK(s.dim() >= 3, who, "spectra of shape (n_freq, H, W)", s.shape().str());
  return fk::sum(s, {s.dim() - 3});
}

struct NoiseMapLoss : Loss {
  using Loss::Loss;
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor mp = noise_map(c.pred, "nefi::NoiseMap");
    const fk::Tensor my = noise_map(c.obs->data.to(c.pred.dtype()), "nefi::NoiseMap");
    const double ym = fk::mean(my).item();
    FK_CHECK(ym != 0, "nefi::NoiseMap", "data with a non-zero mean noise map", "mean 0");
    const fk::Tensor pn = fk::div(mp, fk::add(fk::mean(mp), 1e-12));
    return fk::mean(fk::square(fk::sub(pn, fk::mul(my, 1.0 / ym))));
  }
};

struct DirectDensityLoss : Loss {
  std::string field;
  DirectDensityLoss(std::string f, std::string n) : Loss(std::move(n)), field(std::move(f)) {}
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor& rho = c.field(field);
    const fk::Tensor my = noise_map(c.obs->data.to(rho.dtype()), "nefi::DirectDensity");
    FK_CHECK(my.shape() == rho.shape(), "nefi::DirectDensity",
             "a noise map of the field's shape " + rho.shape().str(), my.shape().str());
    const double ymax = fk::amax(my).item();
    FK_CHECK(ymax > 0, "nefi::DirectDensity", "data with a positive noise map", "max <= 0");
    const fk::Tensor rn = fk::div(rho, fk::add(fk::amax(rho), 1e-12));
    return fk::mean(fk::square(fk::sub(rn, fk::mul(my, 1.0 / ymax))));
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
  bool is_data() const override { return true; }
  fk::Tensor forward(const LossContext& c) const override {
    const fk::Tensor y = c.obs->data.to(c.pred.dtype());
    const double s = fk::amax(fk::abs(y)).item();
    FK_CHECK(s > 0, "nefi::ScaledRelativeMSE", "data with a non-zero value", "all zeros");
    const fk::Tensor ys = fk::mul(y, 1.0 / s);
    const double denom = fk::sum(fk::square(ys)).item();
    return fk::div(fk::sum(fk::square(fk::sub(fk::mul(c.pred, 1.0 / s), ys))), denom);
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
