// The CUDA path of the FFTs: cuFFT through the plan cache of fk/cuda/fft.h.
#include <complex>

#include "fk/cuda/fft.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/fft/spec.h"
#include "fk/profile.h"

namespace fk::fft_detail {
namespace {

// A part of `spec`: the transform along dims [lo, hi) of it, unscaled, with
// `sign` (for a C2C part).
Spec sub_spec(const Spec& spec, Kind kind, int lo, int hi, int sign) {
  Spec s;
  s.kind = kind;
  s.sign = sign;
  for (int i = lo; i < hi; ++i) {
    s.dims.push_back(spec.dims[i]);
    s.n.push_back(spec.n[i]);
  }
  return s;
}

// A C2C along the leading dims of a contiguous x (dims 0..rank-1, and more
// dims after them): one strided plan reads and writes x's own layout (stride
// and batch: the trailing dims' size, distance 1), with no transposes either
// side. Null when x is not laid out so (the caller permutes instead).
Tensor leading_c2c(const Spec& spec, const Tensor& x, DType complex_dt) {
  const int rank = spec.dims.size();
  if (spec.kind != Kind::C2C || rank > 3 || x.dim() <= rank || !x.is_contiguous()) return {};
  for (int i = 0; i < rank; ++i)
    if (spec.dims[i] != i || x.size(i) != spec.n[i]) return {};
  // The trailing dims' size, not stride(rank - 1): contiguity ignores the
  // stride of a size-1 dim, which can then be anything (a [1, 5] view of a
  // [5, 1] tensor has stride 1 there; it gave cuFFT the wrong batch).
  int64_t inner = 1;
  for (int a = rank; a < x.dim(); ++a) inner *= x.size(a);
  Tensor out = empty(x.shape(), {complex_dt, x.device()});
  cuda::FftLayout layout;
  layout.rank = rank;
  for (int i = 0; i < rank; ++i) layout.n[i] = layout.in_embed[i] = layout.out_embed[i] = spec.n[i];
  layout.batch = inner;
  layout.in_stride = layout.out_stride = inner;
  layout.in_dist = layout.out_dist = 1;
  cuda::fft_execute(x.device().index, cuda::kFftC2C, static_cast<int>(complex_dt),
                    spec.sign == FFTW_BACKWARD, layout, x.data_ptr(), out.data_ptr(),
                    cuda_ops::stream_of(x));
  cuda_ops::launched(x);
  if (spec.scale != 1.0) {
    cuda::launch_scale(static_cast<int>(complex_dt), out.data_ptr(), out.numel(), spec.scale,
                       cuda_ops::stream_of(x));
    cuda_ops::launched(x);
  }
  return out;
}

// fk::dct along `dim` of a contiguous real x: the pack pass, one batched
// real FFT of length n over rows of n (cuFFT's packed layout), the unpack
// pass (launch_dct_pack / launch_dct_unpack: cpu/fft.cpp's dct_along).
template <typename R>
Tensor dct_along(const Tensor& x, int dim, bool second_kind) {
  const int64_t n = x.size(dim), half = n / 2 + 1;
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < dim; ++a) outer *= x.size(a);
  for (int a = dim + 1; a < x.dim(); ++a) inner *= x.size(a);
  const DType real_dt = dtype_of<R>(), complex_dt = complex_type(real_dt);
  const Device dev = x.device();
  Tensor rows = empty({outer * inner, n}, {real_dt, dev});
  Tensor spectrum = empty({outer * inner, half}, {complex_dt, dev});
  Tensor out = empty(x.shape(), {real_dt, dev});
  cuda::FftLayout layout;
  layout.n[0] = n;
  layout.batch = outer * inner;
  const int code = static_cast<int>(real_dt);
  void* stream = cuda_ops::stream_of(x);
  void* packed = second_kind ? rows.data_ptr() : spectrum.data_ptr();
  cuda::launch_dct_pack(code, second_kind, x.data_ptr(), packed, outer, n, inner, stream);
  cuda_ops::launched(x);
  cuda::fft_execute(dev.index, second_kind ? cuda::kFftR2C : cuda::kFftC2R,
                    static_cast<int>(complex_dt), !second_kind, layout,
                    second_kind ? rows.data_ptr() : spectrum.data_ptr(),
                    second_kind ? spectrum.data_ptr() : rows.data_ptr(), stream);
  cuda_ops::launched(x);
  const void* transformed = second_kind ? spectrum.data_ptr() : rows.data_ptr();
  cuda::launch_dct_unpack(code, second_kind, transformed, out.data_ptr(), outer, n, inner, stream);
  cuda_ops::launched(x);
  return out;
}

}  // namespace

// is innermost) and made contiguous; one cuFFT plan from the plan cache in
// fk/cuda/fft.h then covers every batch (cuFFT's packed layout, rank <= 3).
// The scale and the pair-bin factor are one multiply by a per-bin weight
// along the last dim (before a C2R, which also gives cuFFT the scratch copy
// it overwrites; after a C2C or R2C). The result is permuted back and made
// contiguous, like the CPU's.
// A multi-dim C2R runs as FFTW defines it (and the CPU tests pin down): the
// complex inverse along the leading dims, then a 1-D C2R along the last whose
// DC and Nyquist bins have their imaginary parts dropped, so any spectrum,
// Hermitian or not, gives the CPU's result whatever cuFFT does with such
// inputs. Transforms of more than 3 dims are split the same way (separable).
template <typename R>
Tensor run_cuda(const Spec& spec, const Tensor& x) {
  const int rank = spec.dims.size();
  if (spec.kind == Kind::R2R) {  // unnormalised, one dim at a time, as the CPU's
    Tensor out = x.contiguous();
    if (out.numel() == 0) return empty(out.shape(), {dtype_of<R>(), x.device()});
    for (int i = 0; i < rank; ++i)
      out = dct_along<R>(out, static_cast<int>(spec.dims[i]), spec.r2r == FFTW_REDFT10);
    return out;
  }
  if (spec.kind == Kind::C2R && rank > 1) {
    Tensor lead = run_cuda<R>(sub_spec(spec, Kind::C2C, 0, rank - 1, FFTW_BACKWARD), x);
    Spec tail = sub_spec(spec, Kind::C2R, rank - 1, rank, FFTW_BACKWARD);
    tail.scale = spec.scale;
    tail.pair_factor = spec.pair_factor;
    return run_cuda<R>(tail, lead);
  }
  if (spec.kind == Kind::R2C && rank > 3) {
    Spec tail = sub_spec(spec, Kind::R2C, rank - 1, rank, FFTW_FORWARD);
    tail.scale = spec.scale;
    tail.pair_factor = spec.pair_factor;
    return run_cuda<R>(sub_spec(spec, Kind::C2C, 0, rank - 1, FFTW_FORWARD), run_cuda<R>(tail, x));
  }
  if (spec.kind == Kind::C2C && rank > 3) {
    Spec rest = sub_spec(spec, Kind::C2C, 3, rank, spec.sign);
    rest.scale = spec.scale;
    return run_cuda<R>(rest, run_cuda<R>(sub_spec(spec, Kind::C2C, 0, 3, spec.sign), x));
  }
  const DType real_dt = dtype_of<R>();
  const DType complex_dt = complex_type(real_dt);
  if (x.numel() > 0)
    if (Tensor out = leading_c2c(spec, x, complex_dt); out.defined()) return out;
  Dims perm;
  for (int a = 0; a < x.dim(); ++a) {
    if (std::find(spec.dims.begin(), spec.dims.end(), a) == spec.dims.end()) perm.push_back(a);
  }
  const int batch_dims = perm.size();
  for (int64_t d : spec.dims) perm.push_back(d);
  Dims inverse = Dims::filled(perm.size(), 0);
  for (int i = 0; i < perm.size(); ++i) inverse[static_cast<int>(perm[i])] = i;

  Tensor xp = x.permute(perm);
  Dims out_shape = xp.shape();
  for (int i = 0; i < rank; ++i) out_shape[batch_dims + i] = spec.n[i];
  const int last = out_shape.size() - 1;
  const int64_t n_last = spec.n.back();
  if (spec.kind == Kind::R2C) out_shape[last] = n_last / 2 + 1;
  Tensor out = empty(out_shape, {spec.kind == Kind::C2R ? real_dt : complex_dt, x.device()});
  if (out.numel() == 0) return out.permute(inverse).contiguous();

  // Per-bin weights along the (halved) last dim: scale, times pair_factor on
  // the bins that stand for two conjugate frequencies, applied in one pass
  // (launch_fft_bin_weights) on the device, with nothing copied from the host
  // (a host copy is refused inside a CUDA graph capture).
  const int64_t bins = n_last / 2 + 1;
  const bool pairs = spec.kind != Kind::C2C && spec.pair_factor != 1.0;
  Tensor in;
  if (spec.kind == Kind::C2R) {
    // A fresh buffer (cuFFT's c2r overwrites its input) holding the weighted
    // spectrum, with the DC and Nyquist bins' imaginary parts dropped.
    const Tensor src = xp.contiguous();
    in = empty(src.shape(), {complex_dt, x.device()});
    cuda::launch_fft_bin_weights(static_cast<int>(complex_dt), src.data_ptr(), in.data_ptr(),
                                 src.numel() / bins, n_last, spec.scale, spec.pair_factor, true,
                                 cuda_ops::stream_of(x));
    cuda_ops::launched(x);
  } else {
    in = xp.contiguous();
  }
  cuda::FftLayout layout;
  layout.rank = rank;
  for (int i = 0; i < rank; ++i) layout.n[i] = spec.n[i];
  layout.batch = 1;
  for (int i = 0; i < batch_dims; ++i) layout.batch *= out_shape[i];
  const int kind = spec.kind == Kind::C2C   ? cuda::kFftC2C
                   : spec.kind == Kind::R2C ? cuda::kFftR2C
                                            : cuda::kFftC2R;
  const bool inverse_dir =
      spec.kind == Kind::C2R || (spec.kind == Kind::C2C && spec.sign == FFTW_BACKWARD);
  cuda::fft_execute(x.device().index, kind, static_cast<int>(complex_dt), inverse_dir, layout,
                    in.data_ptr(), out.data_ptr(), cuda_ops::stream_of(x));
  cuda_ops::launched(x);
  if (spec.kind != Kind::C2R) {
    if (pairs) {
      cuda::launch_fft_bin_weights(static_cast<int>(complex_dt), out.data_ptr(), out.data_ptr(),
                                   out.numel() / bins, n_last, spec.scale, spec.pair_factor, false,
                                   cuda_ops::stream_of(x));
      cuda_ops::launched(x);
    } else if (spec.scale != 1.0) {
      cuda::launch_scale(static_cast<int>(complex_dt), out.data_ptr(), out.numel(), spec.scale,
                         cuda_ops::stream_of(x));
      cuda_ops::launched(x);
    }
  }
  return out.permute(inverse).contiguous();
}

template Tensor run_cuda<float>(const Spec& spec, const Tensor& x);
template Tensor run_cuda<double>(const Spec& spec, const Tensor& x);

}  // namespace fk::fft_detail
