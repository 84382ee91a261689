// The Born/Rytov kernels (scattering_kernels.h): the modulation of the field
// by the illumination phases, the unpacking (and Rytov rotation) of the
// scattered field, the conjugation of the data for the adjoint and the
// demodulation back to cells. One thread per output element; the arithmetic
// is scattering_cells.h's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/scattering_cells.h"
#include "nefi/cuda/scattering_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;

template <typename T>
__global__ void modulate_kernel(ScatteringDims d, const double* phase, const T* x, double* q) {
  FK_CUDA_LOOP(k, d.batch * d.views * d.cells) {
    modulated_cell(d, phase, x, k, q);
  }
}

template <typename T>
__global__ void receive_kernel(ScatteringDims d, const double* u, const double* rotation, T* out) {
  FK_CUDA_LOOP(k, d.batch * 2 * d.views * d.receivers) {
    out[k] = static_cast<T>(received_value(d, u, rotation, k));
  }
}

template <typename T>
__global__ void conjugate_kernel(ScatteringDims d, const T* data, const double* rotation,
                                 double* g) {
  FK_CUDA_LOOP(k, d.batch * d.views * d.receivers) {
    conjugated_datum(d, data, rotation, k, g);
  }
}

template <typename T>
__global__ void demodulate_kernel(ScatteringDims d, const double* phase, const double* p, T* out) {
  FK_CUDA_LOOP(k, d.batch * d.cells) {
    out[k] = static_cast<T>(demodulated_cell(d, phase, p, k));
  }
}

}  // namespace

template <typename T>
void launch_scattering_modulate(const ScatteringDims& d, const double* phase, const T* x, double* q,
                                void* stream) {
  const int64_t n = d.batch * d.views * d.cells;
  if (n == 0) return;
  modulate_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(d, phase, x, q);
  check_launch("nefi::cuda::scattering_modulate");
}

template <typename T>
void launch_scattering_receive(const ScatteringDims& d, const double* u, const double* rotation,
                               T* out, void* stream) {
  const int64_t n = d.batch * 2 * d.views * d.receivers;
  if (n == 0) return;
  receive_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(d, u, rotation, out);
  check_launch("nefi::cuda::scattering_receive");
}

template <typename T>
void launch_scattering_conjugate(const ScatteringDims& d, const T* data, const double* rotation,
                                 double* g, void* stream) {
  const int64_t n = d.batch * d.views * d.receivers;
  if (n == 0) return;
  conjugate_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(d, data, rotation, g);
  check_launch("nefi::cuda::scattering_conjugate");
}

template <typename T>
void launch_scattering_demodulate(const ScatteringDims& d, const double* phase, const double* p,
                                  T* out, void* stream) {
  const int64_t n = d.batch * d.cells;
  if (n == 0) return;
  demodulate_kernel<T><<<blocks_for(n), kThreads, 0, as_stream(stream)>>>(d, phase, p, out);
  check_launch("nefi::cuda::scattering_demodulate");
}

#define NEFI_SCATTERING_INSTANTIATE(T)                                                            \
  template void launch_scattering_modulate<T>(const ScatteringDims&, const double*, const T*,     \
                                              double*, void*);                                    \
  template void launch_scattering_receive<T>(const ScatteringDims&, const double*, const double*, \
                                             T*, void*);                                          \
  template void launch_scattering_conjugate<T>(const ScatteringDims&, const T*, const double*,    \
                                               double*, void*);                                   \
  template void launch_scattering_demodulate<T>(const ScatteringDims&, const double*,             \
                                                const double*, T*, void*);
NEFI_SCATTERING_INSTANTIATE(float)
NEFI_SCATTERING_INSTANTIATE(double)
#undef NEFI_SCATTERING_INSTANTIATE

}  // namespace nefi::cuda
