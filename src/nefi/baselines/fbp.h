#pragma once
// Filtered back-projection for the parallel-beam geometry of RadonOperator
// (operators/radon.h): each projection is convolved with the Kak-Slaney
// band-limited ramp (h[0] = 1/(4 ds^2), h[odd k] = -1/(pi k ds)^2, h[even
// k] = 0; zero-padded, times ds), then back-projected pixel by pixel (linear
// interpolation in s, an independent discretisation of the adjoint) with
// weight angle_range / n_views, divided by how many views of the range see the
// same lines (views pi apart do: over 2 pi each line is seen twice, over
// 3 pi / 2 a quarter turn of them). Views at th_v = v angle_range / n_views,
// detector bins centred on (j + 1/2) ds - L/2. f64 on the host.
#include <cstdint>
#include <vector>

namespace nefi {

// sinogram (n_views, n_det) C order -> image (n, n) on [0, L]^2.
std::vector<double> filtered_back_projection(const std::vector<double>& sinogram, int64_t n_views,
                                             int64_t n_det, double angle_range, int64_t n,
                                             double L);

// The same per z slice of a stack rotated about z (RadonOperator on a 3-D
// domain): sinogram (n_views, n_det, n_z) -> volume (n, n, n_z), C order.
std::vector<double> filtered_back_projection_slices(const std::vector<double>& sinogram,
                                                    int64_t n_views, int64_t n_det, int64_t n_z,
                                                    double angle_range, int64_t n, double L);

}  // namespace nefi
