#include "nefi/field/fourier_features.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"

namespace nefi {

FourierFeatures::FourierFeatures(int in_dim, int n_octaves, bool include_input, bool annealed,
                                 std::vector<int> periodic_axes)
    : in_dim_(in_dim),
      n_octaves_(n_octaves),
      include_input_(include_input),
      annealed_(annealed),
      periodic_(static_cast<size_t>(std::max(in_dim, 0)), false) {
  FK_CHECK(in_dim >= 1 && n_octaves >= 0, "nefi::FourierFeatures", "in_dim >= 1 and n_octaves >= 0",
           fk::to_text(in_dim) + ", " + fk::to_text(n_octaves));
  for (int a : periodic_axes) {
    FK_CHECK(a >= 0 && a < in_dim, "nefi::FourierFeatures periodic_axes",
             "axes in 0.." + fk::to_text(in_dim - 1), fk::to_text(a));
    periodic_[a] = true;
  }
  FK_CHECK(include_input || n_octaves > 0, "nefi::FourierFeatures",
           "at least one feature (include_input or n_octaves > 0)", "none");
}

double FourierFeatures::band_weight(int k, double progress) const {
  if (!annealed_) return 1.0;
  const double beta = std::clamp(progress, 0.0, 1.0) * n_octaves_;
  const double t = std::clamp(beta - k, 0.0, 1.0);
  return 0.5 * (1.0 - std::cos(std::numbers::pi * t));
}

void FourierFeatures::clear_cache() {
  base_ = fk::Tensor();
  gate_ = fk::Tensor();
  key_ptr_ = nullptr;
  gate_progress_ = -1;
  last_progress_ = -1;
}

bool FourierFeatures::all_open(double progress) const {
  for (int k = 0; k < n_octaves_; ++k)
    if (band_weight(k, progress) < 1.0) return false;
  return true;
}

fk::Tensor FourierFeatures::gate_row(double progress) const {
  const int D = out_dim();
  std::vector<double> g(D, 1.0);
  int c = include_input_ ? in_dim_ : 0;
  for (int k = 0; k < n_octaves_; ++k) {
    const double w = band_weight(k, progress);
    for (int a = 0; a < 2 * in_dim_; ++a) g[c + a] = w;
    c += 2 * in_dim_;
  }
  fk::Tensor row = fk::empty({D}, {base_.dtype()});
  if (base_.dtype() == fk::DType::F64) {
    std::copy(g.begin(), g.end(), row.data<double>());
  } else {
    FK_CHECK(base_.dtype() == fk::DType::F32, "nefi::FourierFeatures", "f32 or f64 coordinates",
             fk::name(base_.dtype()));
    std::transform(g.begin(), g.end(), row.data<float>(),
                   [](double v) { return static_cast<float>(v); });
  }
  return row;
}

bool FourierFeatures::retarget(double progress) {
  if (device_.is_cpu() || !base_.defined() || last_progress_ < 0) return false;
  const bool was_open = all_open(last_progress_), open = all_open(progress);
  if (was_open || open) return was_open && open;
  // Both gated: gate_ is the last forward's row, on the device.
  if (gate_progress_ != progress) {
    gate_.copy_(gate_row(progress));
    gate_progress_ = progress;
  }
  last_progress_ = progress;
  return true;
}

void FourierFeatures::to(fk::Device d) {
  if (d == device_) return;
  device_ = d;
  clear_cache();
}

fk::Tensor FourierFeatures::forward(const fk::Tensor& coords, double progress) {
  FK_CHECK(coords.dim() == 2 && coords.size(1) == in_dim_, "nefi::FourierFeatures",
           "coordinates (N, " + fk::to_text(in_dim_) + ")", coords.shape().str());
  FK_CHECK(coords.device().is_cpu(), "nefi::FourierFeatures", "coordinates on the host",
           coords.device().str());
  const int64_t n = coords.size(0);
  const int D = out_dim();
  if (!base_.defined() || key_ptr_ != coords.data_ptr() || key_version_ != coords.version() ||
      !(key_shape_ == coords.shape())) {
    // Computed in f64 on the host once per coordinate set, stored in f32.
    std::vector<double> x = coords.to_vector<double>();
    std::vector<double> f(static_cast<size_t>(n) * D);
    for (int64_t i = 0; i < n; ++i) {
      double* row = f.data() + i * D;
      int c = 0;
      if (include_input_)
        for (int a = 0; a < in_dim_; ++a) row[c++] = periodic_[a] ? 0.0 : x[i * in_dim_ + a];
      for (int k = 0; k < n_octaves_; ++k) {
        const double w = std::ldexp(std::numbers::pi, k);
        for (int a = 0; a < in_dim_; ++a) row[c + a] = std::sin(w * x[i * in_dim_ + a]);
        for (int a = 0; a < in_dim_; ++a) row[c + in_dim_ + a] = std::cos(w * x[i * in_dim_ + a]);
        c += 2 * in_dim_;
      }
    }
    base_ = fk::from_vector(f, fk::Dims{n, D}).to(coords.dtype());
    if (!device_.is_cpu()) base_ = base_.to(device_);
    key_ptr_ = coords.data_ptr();
    key_version_ = coords.version();
    key_shape_ = coords.shape();
    gate_progress_ = -1;
  }
  last_progress_ = progress;
  if (all_open(progress)) return base_;
  if (!gate_.defined() || gate_progress_ != progress) {
    // Written on the host (no op): the gate changes at every annealing step.
    gate_ = gate_row(progress);
    if (!device_.is_cpu()) gate_ = gate_.to(device_);
    gate_progress_ = progress;
  }
  return fk::mul(base_, gate_);
}

}  // namespace nefi
