#pragma once
// The Larmor-field profile step of nv_relaxometry, run after the solve.
// Why: the reference curriculum's stage 2 sets the log-spectrum weight to 0
// and fits the frequency-integrated noise map alone, which hardly depends
// on omega_L; omega_L, read from the same network, then drifts with the
// trunk the density's stage-2 updates move (a Larmor MAE of 0.19-0.27 GHz on
// the smoke seeds, about that of the band centre), while the density is at
// its best. F2 and F1 read omega_L at the readout pixel only, so with rho
// held the stage-1 objective separates into one 1-D problem per pixel:
//   omega_L(r) = argmin_w sum_f (log(c(r) L(f; w)/s + eps) - log(y(f, r)/s + eps))^2
// over the Larmor band, c(r) the operator's spatial part of rho at r (P * rho,
// or (G_nn * rho)^2 under F1), s = max|y| and eps the log_mse floor. It is
// solved by a dense scan of the band and a golden-section search around the
// best sample, on the support rho > tau max rho only (elsewhere omega_L keeps
// its fill); the head's value is a candidate too, so no pixel's term rises.
// The density is untouched; the prediction is recomputed.
#include "nefi/operators/nv_relaxometry.h"
#include "nefi/solve/postprocess.h"

namespace nefi {

struct LarmorProfileOptions {
  double band_lo = 1.5, band_hi = 2.5;  // GHz
  double tau = 0.3;                     // support: rho > tau max rho
  double eps = 1e-10;                   // the log_mse floor (of y / max|y|)
  int scan = 201;                       // band samples before the golden-section search
};

// Reads fields "rho" and "omega_L" (same grid as the measurement's last two
// axes); reports larmor_profile_pixels and the mean per-pixel log-spectrum
// misfit on the support before and after (larmor_profile_misfit_before/_after).
PostprocessPtr larmor_profile(std::shared_ptr<const NVOperator> op, LarmorProfileOptions options);

}  // namespace nefi
