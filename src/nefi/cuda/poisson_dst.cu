// The Poisson DST solve's kernels (poisson_dst_kernels.h): odd extension,
// spectral scaling and restriction around cuFFT. One thread per output
// element; the index arithmetic is poisson_dst_cells.h's.
#include <cstdint>

#include "fk/cuda/common.cuh"
#include "nefi/cuda/poisson_dst_cells.h"
#include "nefi/cuda/poisson_dst_kernels.h"

namespace nefi::cuda {
namespace {

using fk::cuda::detail::as_stream;
using fk::cuda::detail::blocks_for;
using fk::cuda::detail::check_launch;
using fk::cuda::detail::kThreads;
using Cx = fk::cuda::detail::Cx<double>;

static_assert(sizeof(Cx) == sizeof(Complex), "Cx<double> has std::complex<double>'s layout");

template <typename T>
__global__ void odd_extension_kernel(const T* f, OddExtension g, int64_t count, Cx* ext) {
  FK_CUDA_LOOP(k, count) {
    double sign;
    const int64_t src = odd_extension_source(g, k, sign);
    ext[k] = Cx{sign * static_cast<double>(f[src]), 0.0};
  }
}

__global__ void scale_spectrum_kernel(Cx* spectrum, const double* scale, int64_t per_row,
                                      int64_t count) {
  FK_CUDA_LOOP(k, count) {
    const double s = scale[k % per_row];
    spectrum[k] = Cx{spectrum[k].re * s, spectrum[k].im * s};
  }
}

template <typename T>
__global__ void restrict_to_box_kernel(const Cx* ext, OddExtension g, int64_t count, T* out) {
  FK_CUDA_LOOP(k, count) {
    out[k] = static_cast<T>(ext[box_position(g, k)].re);
  }
}

}  // namespace

template <typename T>
void launch_odd_extension(const T* f, const OddExtension& g, Complex* ext, void* stream) {
  const int64_t count = g.batch * g.extended_cells();
  odd_extension_kernel<T><<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
      f, g, count, reinterpret_cast<Cx*>(ext));
  check_launch("nefi::cuda::odd_extension");
}

void launch_scale_spectrum(Complex* spectrum, const double* scale, const OddExtension& g,
                           void* stream) {
  const int64_t count = g.batch * g.extended_cells();
  scale_spectrum_kernel<<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
      reinterpret_cast<Cx*>(spectrum), scale, g.extended_cells(), count);
  check_launch("nefi::cuda::scale_spectrum");
}

template <typename T>
void launch_restrict_to_box(const Complex* ext, const OddExtension& g, T* out, void* stream) {
  const int64_t count = g.batch * g.cells();
  restrict_to_box_kernel<T><<<blocks_for(count), kThreads, 0, as_stream(stream)>>>(
      reinterpret_cast<const Cx*>(ext), g, count, out);
  check_launch("nefi::cuda::restrict_to_box");
}

template void launch_odd_extension<float>(const float*, const OddExtension&, Complex*, void*);
template void launch_odd_extension<double>(const double*, const OddExtension&, Complex*, void*);
template void launch_restrict_to_box<float>(const Complex*, const OddExtension&, float*, void*);
template void launch_restrict_to_box<double>(const Complex*, const OddExtension&, double*, void*);

}  // namespace nefi::cuda
