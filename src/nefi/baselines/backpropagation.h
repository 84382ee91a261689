#pragma once
// Filtered backpropagation for the ring geometry of operators/scattering.h
// (Devaney's diffraction-tomography inversion in its far-field form): per
// view, the scattered field on the receiver ring is expanded in outgoing
// cylindrical waves (u_s = sum_n a_n H_n(k0 R) e^{i n phi}, an FFT over the
// receivers divided by H_n^(1)(k0 R)), continued to the far field (u_inf ~
// sum_n a_n (-i)^n e^{i n phi}), which under Born is the object spectrum at
// K = k0 (r - d) on the Ewald circle, chi^(K) = -4 i u_inf / k0^2. The
// inverse Fourier integral over the disk |K| < 2 k0 (each K covered twice)
// with the Jacobian filter k0^2 |sin(phi_r - theta_l)|:
//   chi(x) = 1/(8 pi^2) sum_l sum_r chi^(K_lr) e^{i K_lr . x} k0^2 |sin(phi_r - theta_l)| dtheta
//   dphi,
// real part, at the cell centres. Band-limited to 2 k0 (resolution lambda/2).
// Rytov data are turned back into fields (u_s = u_i(x_r) phase) first.
#include <cstdint>
#include <vector>

#include "nefi/operators/scattering.h"

namespace nefi {

// data (2, n_angles, n_receivers) -> chi (n, n) on [0, D]^2, C order.
std::vector<double> filtered_backpropagation(const std::vector<double>& data,
                                             const ScatteringGeometry& g, int64_t n, double D);

}  // namespace nefi
