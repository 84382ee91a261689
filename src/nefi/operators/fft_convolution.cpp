#include "nefi/operators/fft_convolution.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/fft.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"

namespace nefi {
namespace {

// Smallest 2^a 3^b 5^c >= n (FFTW is fastest on such lengths).
int64_t fast_length(int64_t n) {
  for (int64_t m = std::max<int64_t>(n, 1);; ++m) {
    int64_t r = m;
    for (int64_t p : {2, 3, 5})
      while (r % p == 0) r /= p;
    if (r == 1) return m;
  }
}

// Iterates every index of `shape` in C order.
template <typename F>
void for_each_index(const fk::Dims& shape, F&& f) {
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t p = 0; p < shape.numel(); ++p) {
    f(p, idx);
    for (int a = shape.size() - 1; a >= 0; --a) {
      if (++idx[a] < shape[a]) break;
      idx[a] = 0;
    }
  }
}

// v (..., *n) real and contiguous -> zeros (..., *L) with v placed at `off`
// along each of the last d axes (a plain copy when L == n and off == 0).
fk::Tensor place(const fk::Tensor& v, const std::vector<int64_t>& L,
                 const std::vector<int64_t>& off) {
  const int d = static_cast<int>(L.size());
  const int lead = v.dim() - d;
  bool same = true;
  for (int a = 0; a < d; ++a) same = same && L[a] == v.size(lead + a) && off[a] == 0;
  if (same) return v;
  fk::Dims out_shape = v.shape();
  for (int a = 0; a < d; ++a) out_shape[lead + a] = L[a];
  if (!v.device().is_cpu()) {
    // One strided device copy into the zeroed box.
    fk::Tensor out = fk::zeros(out_shape, {v.dtype(), v.device()});
    fk::Tensor box = out;
    for (int a = 0; a < d; ++a) box = box.narrow(lead + a, off[a], v.size(lead + a));
    box.copy_(v);
    return out;
  }
  fk::Tensor out = fk::empty(out_shape, {v.dtype()});
  std::memset(out.data_ptr(), 0, out.nbytes());
  const size_t item = v.itemsize();
  const int64_t row = v.size(v.dim() - 1);  // contiguous runs along the last axis
  const int64_t rows = v.numel() / row;
  const char* src = static_cast<const char*>(v.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  for (int64_t r = 0; r < rows; ++r) {
    // Row r of v: decompose into (batch, i_0 .. i_{d-2}).
    int64_t rem = r, o = 0, stride = 1;
    for (int a = v.dim() - 2; a >= 0; --a) {
      const int64_t i = rem % v.size(a);
      rem /= v.size(a);
      const bool spatial = a >= lead;
      o += (spatial ? i + off[a - lead] : i) * stride;
      stride *= spatial ? L[a - lead] : v.size(a);
    }
    // o counts rows of the output; the last axis adds its own offset.
    std::memcpy(dst + (o * L[d - 1] + off[d - 1]) * item, src + r * row * item, row * item);
  }
  return out;
}

PsfSample normalised(PsfSample s) {
  double total = 0;
  for (double v : s.values) total += v;
  FK_CHECK(total > 0, "nefi::psf", "a kernel with positive mass", "an empty one");
  for (double& v : s.values) v /= total;
  return s;
}

struct FFTConvolutionBackward : fk::autograd::Node {
  fk::Tensor spectrum;  // a cached constant, not a saved activation
  std::vector<int64_t> L, radius, zeros;
  const char* name() const override { return "FFTConvolutionBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    // Adjoint of crop_r . conv . place_0 is crop_0 . correlate . place_r.
    return {spectral_filter(grads[0], spectrum, L, radius, zeros, /*conjugate=*/true)};
  }
};

}  // namespace

fk::Tensor spectral_filter(const fk::Tensor& v, const fk::Tensor& H, const std::vector<int64_t>& L,
                           const std::vector<int64_t>& place_at,
                           const std::vector<int64_t>& crop_at, bool conjugate) {
  fk::autograd::NoGradGuard ng;
  const int d = static_cast<int>(L.size());
  const int lead = v.dim() - d;
  std::vector<int64_t> dims;
  for (int a = 0; a < d; ++a) dims.push_back(lead + a);
  fk::Tensor X;
  {
    fk::profile::OpScope scope("fft_conv_place");
    X = place(v.is_contiguous() ? v : v.contiguous(), L, place_at);
  }
  X = fk::rfftn(X, {}, dims).contiguous();
  if (!X.device().is_cpu()) {
    // cuFFT both ways (fk's dispatch); the multiply is an fk device op. H is
    // normally already there (FFTConvolution caches its device copy); one
    // elsewhere is copied over (H.numel() complex values).
    const fk::Tensor Hd = H.device() == X.device() ? H : H.to(X.device());
    X = fk::mul(X, conjugate ? fk::conj(Hd) : Hd);
  } else {
    fk::profile::OpScope scope("fft_conv_multiply");
    // A spectrum on a device is copied to the host, as the branch above
    // copies a host one over (the loop reads it here).
    const fk::Tensor Hh = H.device().is_cpu() ? H : H.to(fk::kCPU);
    const int64_t m = Hh.numel(), reps = X.numel() / m;
    auto run = [&](auto tag) {
      using C = decltype(tag);
      C* x = X.data<C>();
      const C* h = Hh.data<C>();
      for (int64_t b = 0; b < reps; ++b)
        for (int64_t i = 0; i < m; ++i) x[b * m + i] *= conjugate ? std::conj(h[i]) : h[i];
    };
    if (X.dtype() == fk::DType::C128)
      run(fk::c128{});
    else
      run(fk::c64{});
    X.bump_version();
  }
  fk::Tensor y = fk::irfftn(X, L, dims);
  for (int a = 0; a < d; ++a) y = y.narrow(lead + a, crop_at[a], v.size(lead + a));
  return y;
}

PsfFunction gaussian_psf(double sigma, double truncate) {
  FK_CHECK(std::isfinite(sigma) && sigma > 0, "nefi::gaussian_psf", "a finite sigma > 0",
           fk::to_text(sigma));
  return [sigma, truncate](const std::vector<double>& h) {
    PsfSample s;
    std::vector<int64_t> r;
    double cells = 1;  // the sampled kernel's size, checked before it is made
    for (double hi : h) {
      const double radius = std::ceil(truncate * sigma / hi);
      cells *= 2 * radius + 1;
      FK_CHECK(cells <= double(int64_t{1} << 26), "nefi::gaussian_psf",
               "a sampled kernel of at most 2^26 cells (2 ceil(4 sigma / h) + 1 a side)",
               "sigma " + fk::to_text(sigma) + " (a radius of " + fk::to_text(radius) + " cells)");
      r.push_back(static_cast<int64_t>(radius));
      s.shape.push_back(2 * r.back() + 1);
    }
    s.values.resize(s.shape.numel());
    for_each_index(s.shape, [&](int64_t p, const std::vector<int64_t>& idx) {
      double q = 0;
      for (size_t a = 0; a < h.size(); ++a) {
        const double d = (idx[a] - r[a]) * h[a] / sigma;
        q += d * d;
      }
      s.values[p] = std::exp(-0.5 * q);
    });
    return normalised(std::move(s));
  };
}

PsfFunction motion_psf(double length, double angle_deg) {
  FK_CHECK(length > 0, "nefi::motion_psf", "length > 0", fk::to_text(length));
  return [length, angle_deg](const std::vector<double>& h) {
    const size_t d = h.size();
    const double th = angle_deg * std::numbers::pi / 180.0;
    // Direction: axis d-1 is x, axis d-2 is y (1-D: along the only axis).
    std::vector<double> dir(d, 0.0);
    dir[d - 1] = d == 1 ? 1.0 : std::cos(th);
    if (d >= 2) dir[d - 2] = std::sin(th);
    PsfSample s;
    std::vector<int64_t> r;
    double hmin = h[0];
    for (size_t a = 0; a < d; ++a) {
      r.push_back(static_cast<int64_t>(std::ceil(0.5 * length * std::abs(dir[a]) / h[a])) + 1);
      s.shape.push_back(2 * r.back() + 1);
      hmin = std::min(hmin, h[a]);
    }
    s.values.assign(s.shape.numel(), 0.0);
    const int n = std::max(2, static_cast<int>(std::ceil(8.0 * length / hmin)));
    for (int i = 0; i < n; ++i) {
      const double t = length * ((i + 0.5) / n - 0.5);
      // Multilinear deposit of one sample point.
      std::vector<int64_t> base(d);
      std::vector<double> frac(d);
      for (size_t a = 0; a < d; ++a) {
        const double u = t * dir[a] / h[a] + r[a];
        base[a] = static_cast<int64_t>(std::floor(u));
        frac[a] = u - base[a];
      }
      for (int corner = 0; corner < (1 << d); ++corner) {
        double w = 1;
        int64_t off = 0;
        bool inside = true;
        for (size_t a = 0; a < d; ++a) {
          const int bit = (corner >> a) & 1;
          const int64_t j = base[a] + bit;
          inside = inside && j >= 0 && j < s.shape[a];
          w *= bit ? frac[a] : 1 - frac[a];
          off = off * s.shape[a] + j;
        }
        if (inside) s.values[off] += w;
      }
    }
    return normalised(std::move(s));
  };
}

PsfFunction disk_psf(double radius) {
  FK_CHECK(radius > 0, "nefi::disk_psf", "radius > 0", fk::to_text(radius));
  return [radius](const std::vector<double>& h) {
    PsfSample s;
    std::vector<int64_t> r;
    for (double hi : h) {
      r.push_back(static_cast<int64_t>(std::ceil(radius / hi)) + 1);
      s.shape.push_back(2 * r.back() + 1);
    }
    s.values.assign(s.shape.numel(), 0.0);
    constexpr int kSub = 4;  // sub-samples per axis: antialiased edge
    const size_t d = h.size();
    for_each_index(s.shape, [&](int64_t p, const std::vector<int64_t>& idx) {
      int inside = 0, total = 0;
      fk::Dims sub = fk::Dims::filled(static_cast<int>(d), kSub);
      for_each_index(sub, [&](int64_t, const std::vector<int64_t>& si) {
        double q = 0;
        for (size_t a = 0; a < d; ++a) {
          const double x = (idx[a] - r[a] + (si[a] + 0.5) / kSub - 0.5) * h[a];
          q += x * x;
        }
        inside += q <= radius * radius;
        ++total;
      });
      s.values[p] = static_cast<double>(inside) / total;
    });
    return normalised(std::move(s));
  };
}

FFTConvolution::FFTConvolution(PsfFunction psf, Domain domain, bool periodic)
    : psf_(std::move(psf)),
      domain_(std::move(domain)),
      periodic_(periodic),
      cache_(std::make_shared<Cache>()) {
  prepare();
}

std::shared_ptr<Operator> FFTConvolution::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<FFTConvolution>(*this);  // shares the spectrum cache
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

void FFTConvolution::prepare() {
  const PsfSample k = kernel();
  FK_CHECK(k.shape.size() == domain_.ndim(), "nefi::FFTConvolution",
           "a " + fk::to_text(domain_.ndim()) + "-D kernel", k.shape.str());
  fft_shape_.clear();
  radius_.clear();
  for (int a = 0; a < domain_.ndim(); ++a) {
    fft_shape_.push_back(periodic_ ? domain_.shape()[a]
                                   : fast_length(domain_.shape()[a] + k.shape[a] - 1));
    radius_.push_back((k.shape[a] - 1) / 2);
  }
}

fk::Tensor FFTConvolution::spectrum(fk::DType real_dtype, fk::Device device) const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  if (device.is_cpu()) return host_spectrum(real_dtype);
  const SpectrumKey key{fft_shape_, domain_.spacing(), static_cast<int>(real_dtype), device.str()};
  auto it = cache_->spectra.find(key);
  if (it != cache_->spectra.end()) return it->second;
  fk::Tensor spec = host_spectrum(real_dtype).to(device);
  cache_->spectra[key] = spec;
  return spec;
}

void FFTConvolution::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda()) spectrum(dtype, device);
}

fk::Tensor FFTConvolution::host_spectrum(fk::DType real_dtype) const {
  const std::vector<int64_t>& L = fft_shape_;
  // The spacing is part of the key: two grids can pad to one length L while
  // sampling the kernel at different spacings.
  const SpectrumKey key{L, domain_.spacing(), static_cast<int>(real_dtype), fk::kCPU.str()};
  auto it = cache_->spectra.find(key);
  if (it != cache_->spectra.end()) return it->second;
  const PsfSample k = kernel();
  const fk::Dims Ld(L);
  std::vector<double> grid(Ld.numel(), 0.0);
  for_each_index(k.shape, [&](int64_t p, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t a = 0; a < idx.size(); ++a) {
      // Linear: kernel at [0, m) so 'same' starts at the kernel radius.
      // Periodic: centred on index 0, wrapped.
      int64_t j = idx[a];
      if (periodic_) j = ((idx[a] - (k.shape[a] - 1) / 2) % L[a] + L[a]) % L[a];
      off = off * L[a] + j;
    }
    grid[off] += k.values[p];
  });
  fk::Tensor kt = fk::from_vector(grid, Ld).to(real_dtype);
  fk::Tensor spec = fk::rfftn(kt, L).contiguous();
  cache_->spectra[key] = spec;
  return spec;
}

fk::Tensor FFTConvolution::apply(const fk::Tensor& x) const {
  const int d = domain_.ndim();
  FK_CHECK(x.dim() >= d, "nefi::FFTConvolution",
           "a field of shape (..., " + domain_.shape().str() + ")", x.shape().str());
  for (int a = 0; a < d; ++a)
    FK_CHECK(x.size(x.dim() - d + a) == domain_.shape()[a], "nefi::FFTConvolution",
             "a field of shape (..., " + domain_.shape().str() + ")", x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::FFTConvolution",
           "a real f32/f64 field", fk::name(x.dtype()));
  // One custom node: place + rfftn + multiply + irfftn + crop forward, the
  // conjugate chain backward (3 ops each way; the generic chain is ~13).
  const std::vector<int64_t> zeros(d, 0);
  const std::vector<int64_t>& crop = periodic_ ? zeros : radius_;
  const fk::Tensor H = spectrum(x.dtype(), x.device());
  fk::Tensor y = spectral_filter(x.detach(), H, fft_shape_, zeros, crop, false);
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<FFTConvolutionBackward>();
    node->spectrum = H;
    node->L = fft_shape_;
    node->radius = crop;
    node->zeros = zeros;
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
