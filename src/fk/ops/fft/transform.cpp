// The FFT entry points: argument checks and defaults, padding and
// truncation, the pure backward (the adjoint transform) and the autograd node;
// the transforms themselves run in cpu/fft.cpp (FFTW) or fft/cufft.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/copy.h"
#include "fk/ops/fft.h"
#include "fk/ops/fft/spec.h"
#include "fk/profile.h"

namespace fk {
namespace {

using fft_detail::Kind;
using fft_detail::Spec;

// x with its `dims` resized to `sizes`: truncation is a view, padding a
// zero-filled copy (then *owned = true: the caller may overwrite it).
Tensor resize_dims(const Tensor& x, const Dims& dims, const Dims& sizes, bool* owned) {
  Tensor v = x;
  Dims target = x.shape();
  bool pad = false;
  for (int i = 0; i < dims.size(); ++i) {
    if (x.size(dims[i]) > sizes[i]) v = v.narrow(dims[i], 0, sizes[i]);
    pad = pad || x.size(dims[i]) < sizes[i];
    target[dims[i]] = sizes[i];
  }
  if (!pad) return v;
  Tensor z = zeros(target, {x.dtype(), x.device()});
  Tensor region = z;
  for (int64_t dim : dims) region = region.narrow(dim, 0, v.size(dim));
  copy_(region, v);
  if (owned != nullptr) *owned = true;
  return z;
}

// The transform of `x` (any strides, no autograd). `owned`: x may be overwritten.
Tensor run(const Spec& spec, const Tensor& input, bool owned) {
  // Views and conversions below must not record: detach (an allocation) only when needed.
  Tensor x = autograd::tensor_requires_grad(input) ? input.detach() : input;
  const DType dt = x.dtype();
  const DType real_dt = is_complex(dt) ? real_type(dt) : (dt == DType::F64 ? dt : DType::F32);
  const bool real_in = spec.kind == Kind::R2C || spec.kind == Kind::R2R;
  const DType want = real_in ? real_dt : complex_type(real_dt);
  if (dt != want) {
    x = x.to(want);
    owned = true;
  }
  Dims in_sizes = spec.n;
  if (spec.kind == Kind::C2R) in_sizes[in_sizes.size() - 1] = spec.n.back() / 2 + 1;
  x = resize_dims(x, spec.dims, in_sizes, &owned);
  if (x.device().is_cuda()) {
    if (real_dt == DType::F64) return fft_detail::run_cuda<double>(spec, x);
    return fft_detail::run_cuda<float>(spec, x);
  }
  if (real_dt == DType::F64) return fft_detail::run_fftw<double>(spec, x, owned);
  return fft_detail::run_fftw<float>(spec, x, owned);
}

// --- the pure backward --------------------------------------------------------

// Gradient w.r.t. the input (of shape `in_shape`, dtype `in_dtype`) of the
// transform `spec`, from the gradient `g` of its output.
Tensor backward(const Spec& spec, const Dims& in_shape, DType in_dtype, const Tensor& g) {
  profile::OpScope scope("fft_backward");
  Spec adj = spec;
  Tensor gx;
  switch (spec.kind) {
    case Kind::C2C:
      // (c F_sign)^H = c F_-sign.
      adj.sign = -spec.sign;
      gx = run(adj, g, false);
      break;
    case Kind::R2C:
      // rfft = the full DFT restricted to the half spectrum; its adjoint on a
      // real input is Re(F^H g) = irfft of g with the pair bins halved.
      adj.kind = Kind::C2R;
      adj.pair_factor = 0.5 * spec.pair_factor;
      gx = run(adj, g, false);
      break;
    case Kind::C2R:
      // irfft counts each pair bin twice (the bin and its mirror image).
      adj.kind = Kind::R2C;
      adj.pair_factor = 2.0 * spec.pair_factor;
      gx = run(adj, g, false);
      break;
    case Kind::R2R: {
      // Per dim, REDFT10^T = REDFT01 diag(2, 1, ..., 1) and REDFT01^T =
      // diag(1/2, 1, ..., 1) REDFT10: the first entry along each dim
      // doubled before (II) or halved after (III).
      const bool second = spec.r2r == FFTW_REDFT10;
      adj.r2r = second ? FFTW_REDFT01 : FFTW_REDFT10;
      auto first_entries = [&](Tensor t, double f) {
        for (int64_t dim : spec.dims) {
          Tensor first = t.narrow(dim, 0, 1);
          copy_(first, first * f);
        }
        return t;
      };
      gx = second ? run(adj, first_entries(g.clone(), 2.0), true)
                  : first_entries(run(adj, g, false), 0.5);
      break;
    }
  }
  Dims sizes;
  for (int64_t dim : spec.dims) sizes.push_back(in_shape[static_cast<int>(dim)]);
  gx = resize_dims(gx, spec.dims, sizes, nullptr);
  if (is_complex(gx.dtype()) && !is_complex(in_dtype)) gx = gx.real();
  // A half input's gradient is its dtype (computed in f32): the next node of
  // a non-leaf input expects it (only leaves are cast by the engine).
  return is_inexact(in_dtype) ? gx.to(in_dtype) : gx;
}

class FftBackward : public autograd::Node {
 public:
  FftBackward(Spec spec, Dims in_shape, DType in_dtype)
      : spec_(std::move(spec)), in_shape_(in_shape), in_dtype_(in_dtype) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {backward(spec_, in_shape_, in_dtype_, grads[0])};
  }
  const char* name() const override {
    switch (spec_.kind) {
      case Kind::R2C:
        return "RfftBackward";
      case Kind::C2R:
        return "IrfftBackward";
      case Kind::R2R:
        return "DctBackward";
      default:
        return "FftBackward";
    }
  }

 private:
  Spec spec_;
  Dims in_shape_;
  DType in_dtype_;
};

// --- argument handling ----------------------------------------------------------

double norm_scale(FFTNorm norm, bool inverse, const Dims& n) {
  double total = 1;
  for (int64_t v : n) total *= static_cast<double>(v);
  switch (norm) {
    case FFTNorm::Ortho:
      return 1.0 / std::sqrt(total);
    case FFTNorm::Backward:
      return inverse ? 1.0 / total : 1.0;
    case FFTNorm::Forward:
      return inverse ? 1.0 : 1.0 / total;
  }
  return 1.0;
}

// Checks and defaults shared by every entry point and the public backward:
// the Spec of transforming an input of `shape` and `dtype`. `s` entries of -1
// take the default length; `dims` empty means numpy's default.
Spec make_spec(const char* op, Kind kind, bool inverse, const Dims& shape, DType dtype,
               const Dims& s, const Dims& dims_in, FFTNorm norm) {
  if (kind == Kind::R2C || kind == Kind::R2R) {
    FK_CHECK(!is_complex(dtype), op,
             kind == Kind::R2R ? "a real input" : "a real input (use fft for complex input)",
             name(dtype));
  }
  FK_CHECK(dtype != DType::Bool, op, "a numeric input", name(dtype));
  const int rank = shape.size();
  // wrap_dim takes dim 0 / -1 of a 0-d tensor (for reductions): the
  // transform would then read a size the shape does not have.
  FK_CHECK(rank >= 1, op, "an input of at least 1 dim", "a 0-d input");
  Dims dims = dims_in;
  if (dims.empty()) {
    FK_CHECK(s.size() <= rank, op, fmt::format("at most {} signal sizes (the input's rank)", rank),
             s.str());
    const int count = s.empty() ? rank : s.size();
    for (int a = rank - count; a < rank; ++a) dims.push_back(a);
  }
  FK_CHECK(s.empty() || s.size() == dims.size(), op,
           fmt::format("{} signal sizes (one per dim)", dims.size()), s.str());
  Spec spec;
  spec.kind = kind;
  spec.sign = inverse ? FFTW_BACKWARD : FFTW_FORWARD;
  for (int i = 0; i < dims.size(); ++i) {
    const int dim = wrap_dim(dims[i], rank, op);
    FK_CHECK(std::find(spec.dims.begin(), spec.dims.end(), dim) == spec.dims.end(), op,
             "distinct dims", dims.str());
    spec.dims.push_back(dim);
    const bool last = i + 1 == dims.size();
    int64_t len = s.empty() ? -1 : s[i];
    FK_CHECK(len == -1 || len >= 1, op, "signal lengths >= 1 (or -1 for the default)", s.str());
    if (len == -1) len = kind == Kind::C2R && last ? 2 * (shape[dim] - 1) : shape[dim];
    FK_CHECK(len >= 1, op, "a signal length >= 1",
             fmt::format("{} along dim {} (input shape {})", len, dim, shape.str()));
    spec.n.push_back(len);
  }
  spec.scale = norm_scale(norm, inverse, spec.n);
  return spec;
}

// An entry point: checks, then forward + autograd.
Tensor transform(const char* op, Kind kind, bool inverse, const Tensor& x, const Dims& s,
                 const Dims& dims, FFTNorm norm) {
  profile::OpScope scope(op);
  FK_CHECK(x.defined(), op, "a defined tensor", "an undefined one");
  const Spec spec = make_spec(op, kind, inverse, x.shape(), x.dtype(), s, dims, norm);
  Tensor out = run(spec, x, false);
  if (autograd::needs_grad(x)) {
    auto node = std::make_shared<FftBackward>(spec, x.shape(), x.dtype());
    autograd::record(node, {x}, out);
  }
  return out;
}

// An n-d argument list as Dims (at most kMaxDims entries, like any shape).
Dims list(const char* op, const char* what, const std::vector<int64_t>& v) {
  FK_CHECK(v.size() <= static_cast<size_t>(kMaxDims), op,
           fmt::format("at most {} {}", kMaxDims, what), fk::to_text(v.size()));
  return Dims(v);
}

Tensor transform_n(const char* op, Kind kind, bool inverse, const Tensor& x,
                   const std::vector<int64_t>& s, const std::vector<int64_t>& dims, FFTNorm norm) {
  return transform(op, kind, inverse, x, list(op, "signal sizes", s), list(op, "dims", dims), norm);
}

}  // namespace

Tensor fft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("fft", Kind::C2C, false, x, Dims{n}, Dims{dim}, norm);
}
Tensor ifft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("ifft", Kind::C2C, true, x, Dims{n}, Dims{dim}, norm);
}
Tensor rfft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("rfft", Kind::R2C, false, x, Dims{n}, Dims{dim}, norm);
}
Tensor irfft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("irfft", Kind::C2R, true, x, Dims{n}, Dims{dim}, norm);
}

Tensor fftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
            FFTNorm norm) {
  return transform_n("fftn", Kind::C2C, false, x, s, dims, norm);
}
Tensor ifftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("ifftn", Kind::C2C, true, x, s, dims, norm);
}
Tensor rfftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("rfftn", Kind::R2C, false, x, s, dims, norm);
}
Tensor irfftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
              FFTNorm norm) {
  return transform_n("irfftn", Kind::C2R, true, x, s, dims, norm);
}

Tensor fft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
            FFTNorm norm) {
  return transform_n("fft2", Kind::C2C, false, x, s, dims, norm);
}
Tensor ifft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("ifft2", Kind::C2C, true, x, s, dims, norm);
}
Tensor rfft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("rfft2", Kind::R2C, false, x, s, dims, norm);
}
Tensor irfft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
              FFTNorm norm) {
  return transform_n("irfft2", Kind::C2R, true, x, s, dims, norm);
}
Tensor dct(const Tensor& x, DctType type, const std::vector<int64_t>& s,
           const std::vector<int64_t>& dims) {
  const char* op = "dct";
  profile::OpScope scope(op);
  FK_CHECK(x.defined(), op, "a defined tensor", "an undefined one");
  Spec spec = make_spec(op, Kind::R2R, false, x.shape(), x.dtype(), list(op, "signal sizes", s),
                        list(op, "dims", dims), FFTNorm::Backward);
  spec.r2r = type == DctType::II ? FFTW_REDFT10 : FFTW_REDFT01;
  Tensor out = run(spec, x, false);
  if (autograd::needs_grad(x)) {
    auto node = std::make_shared<FftBackward>(spec, x.shape(), x.dtype());
    autograd::record(node, {x}, out);
  }
  return out;
}

Tensor fft_backward(FFTKind kind, const Tensor& g, const Dims& x_shape, DType x_dtype,
                    const std::vector<int64_t>& s, const std::vector<int64_t>& dims, FFTNorm norm) {
  const char* op = "fft_backward";
  FK_CHECK(g.defined(), op, "a defined gradient", "an undefined one");
  const Kind k = kind == FFTKind::Rfft ? Kind::R2C : kind == FFTKind::Irfft ? Kind::C2R : Kind::C2C;
  const bool inverse = kind == FFTKind::Ifft || kind == FFTKind::Irfft;
  const Spec spec = make_spec(op, k, inverse, x_shape, x_dtype, list(op, "signal sizes", s),
                              list(op, "dims", dims), norm);
  // g must be shaped as the forward's output: another shape was transformed
  // along the wrong dims, or padded or cut silently.
  Dims out_shape = x_shape;
  for (int i = 0; i < spec.dims.size(); ++i) {
    const bool halved = k == Kind::R2C && i + 1 == spec.dims.size();
    out_shape[spec.dims[i]] = halved ? spec.n[i] / 2 + 1 : spec.n[i];
  }
  FK_CHECK(g.shape() == out_shape, op, "a gradient of the output's shape " + out_shape.str(),
           g.shape().str());
  return backward(spec, x_shape, x_dtype, g);
}

}  // namespace fk
