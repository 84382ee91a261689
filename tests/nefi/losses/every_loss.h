#pragma once
// Every data loss and regulariser of nefi/losses/{data_losses,regularizers}.h,
// once per option that changes its arithmetic, with the inputs it is checked
// on: the one list the CPU dispatch test (losses/loss_dispatch_test.cpp) and
// the device parity test (cuda/loss_device_test.cpp) both walk, so a loss
// added here is checked on both.
#include <cmath>
#include <string>
#include <vector>

#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/domain.h"
#include "nefi/losses/data_losses.h"
#include "nefi/losses/regularizers.h"

namespace nefi_test {

struct LossCase {
  std::string label;
  nefi::LossPtr loss;
  bool has_rows;  // forward_rows is defined
  bool positive;  // wants positive predictions and observations (logs of them)
};

inline std::vector<LossCase> every_loss() {
  using namespace nefi;
  TVOptions aniso;
  aniso.isotropic = false;
  aniso.eps = 1e-3;
  TVOptions iso_periodic;
  iso_periodic.eps = 1e-4;
  iso_periodic.periodic_axes = {0};
  TVOptions aniso_plain = aniso;
  aniso_plain.use_spacing = false;
  aniso_plain.periodic_axes = {0};
  return {
      {"mse", mse_loss(), true, false},
      {"mse_noise_aware", mse_loss(true), true, false},
      {"relative_mse", relative_mse_loss(), true, false},
      {"log_mse_max", log_mse_loss("max", 1e-6), false, true},
      {"log_mse_mean", log_mse_loss("mean", 1e-6), false, true},
      {"log_mse_none", log_mse_loss("none", 1e-6), false, true},
      {"normalized_mse", normalized_mse_loss(), false, true},
      {"huber", huber_loss(0.5), true, false},
      {"poisson_nll", poisson_nll_loss(1e-6), true, true},
      {"l1", l1_loss("x"), true, false},
      {"tikhonov", tikhonov_loss("x"), true, false},
      {"range", range_penalty_loss(-0.5, 0.5, "x"), true, false},
      {"monotone_increasing", monotone_loss(0, 1, "x"), true, false},
      {"monotone_decreasing", monotone_loss(0, -1, "x"), true, false},
      {"laplacian", laplacian_loss("x"), true, false},
      {"laplacian_cells", laplacian_loss("x", false), true, false},
      {"laplacian_periodic", laplacian_loss("x", true, "laplacian", {0}), true, false},
      {"tv_default", tv_loss("x"), true, false},
      {"tv_aniso", tv_loss("x", aniso), true, false},
      {"tv_iso_periodic", tv_loss("x", iso_periodic), true, false},
      {"tv_aniso_periodic_cells", tv_loss("x", aniso_plain), true, false},
  };
}

// The grids every case runs on: 1-, 2- and 3-D, with an axis of one cell.
inline std::vector<fk::Dims> loss_grids() {
  return {{37}, {6, 9}, {4, 1, 5}};
}

// One problem's inputs, f64 on the host: the field x (also the prediction),
// the observation, a fractional mask with some unobserved cells, the noise.
struct LossInputs {
  fk::Tensor x, obs, mask;
  double noise_std = 0.3;
};

inline LossInputs loss_inputs(const fk::Dims& shape, bool positive, uint64_t seed) {
  fk::Generator g(seed);
  LossInputs in;
  in.x = fk::randn(shape, {fk::DType::F64}, &g);
  in.obs = fk::randn(shape, {fk::DType::F64}, &g);
  std::vector<double> x = in.x.to_vector<double>(), y = in.obs.to_vector<double>(), w(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    if (positive) {  // in (0.1, ~3): the logs see their argument, not eps
      x[i] = 0.1 + std::abs(x[i]);
      y[i] = 0.1 + std::abs(y[i]);
    }
    w[i] = i % 5 == 1 ? 0.0 : (i % 3 == 0 ? 0.5 : 1.0);
  }
  in.x = fk::from_vector(x, shape);
  in.obs = fk::from_vector(y, shape);
  in.mask = fk::from_vector(w, shape);
  return in;
}

// A domain whose axes have different spacings (so the per-axis 1/h shows).
inline nefi::Domain loss_domain(const fk::Dims& shape) {
  std::vector<double> extent;
  for (int a = 0; a < shape.size(); ++a) extent.push_back(1.0 + 0.5 * a);
  return nefi::Domain(shape, extent);
}

}  // namespace nefi_test
