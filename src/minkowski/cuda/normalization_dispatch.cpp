// The device passes of segment normalization (ops/normalization_device.h):
// the segments (unless there is one, or normalize uploaded them) and the row
// counts uploaded, normalization.cu's kernels on the current stream, nothing
// read back.
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/normalization_device.h"

namespace minkowski {

namespace {

using cuda_dispatch::upload;
using cuda_dispatch::with_type;

enum Term { kValue = 0, kSquaredDeviation = 1, kGradAndGradXhat = 2 };

// The rows' segments on the device (normalize's upload when it made one);
// none (null: every row in segment 0, as normalization.cu reads it) for a
// single segment, BatchNorm's case.
fk::Tensor upload_segments(const Segments& seg, const fk::Device& device) {
  if (seg.count == 1) return fk::Tensor();
  if (seg.device_rows.defined() && seg.device_rows.device() == device) return seg.device_rows;
  return upload(seg.of_row, device);
}
const int32_t* i32_or_null(const fk::Tensor& t) {
  return t.defined() ? t.data<int32_t>() : nullptr;
}
void* stream_of(const fk::Tensor& t) {
  return fk::cuda::current_stream(t.device().index);
}

// The blocked sums of a term, (K = 1 or 2) x S x C f64 on x's device.
fk::Tensor segment_sums(Term term, const fk::Tensor& x, const fk::Tensor& g,
                        const fk::Tensor& d_seg, int64_t segments, int64_t block_rows,
                        const double* mean, const double* invstd) {
  const int64_t n = x.size(0), c = x.size(1), blocks = (n + block_rows - 1) / block_rows;
  const int64_t width = (term == kGradAndGradXhat ? 2 : 1) * segments * c;
  const fk::TensorOptions f64{fk::DType::F64, x.device()};
  fk::Tensor part = fk::empty({blocks, width}, f64), out = fk::empty({width}, f64);
  void* stream = stream_of(x);
  with_type(x, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_segment_sums<T>(static_cast<int>(term), x.data<T>(),
                                 g.defined() ? g.data<T>() : nullptr, n, c, i32_or_null(d_seg),
                                 segments, block_rows, mean, invstd, part.data<double>(), stream);
    fk::profile::count_launch();
  });
  if (blocks > 0) {
    cuda::launch_sum_blocks(part.data<double>(), blocks, width, out.data<double>(), stream);
    fk::profile::count_launch();
  } else {
    fk::fill_(out, 0.0);
  }
  return out;
}

// y = (x - m - r) s + u, or with g: g s - (x - m - r) u - v (kernels.h).
fk::Tensor segment_affine(const fk::Tensor& x, const fk::Tensor& g, const fk::Tensor& d_seg,
                          const fk::Tensor& coef) {
  const int64_t n = x.size(0), c = x.size(1);
  fk::Tensor y = fk::empty({n, c}, {x.dtype(), x.device()});
  with_type(x, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_segment_affine<T>(x.data<T>(), g.defined() ? g.data<T>() : nullptr, n, c,
                                   i32_or_null(d_seg), coef.data<T>(), coef.size(1), y.data<T>(),
                                   stream_of(x));
    fk::profile::count_launch();
  });
  return y;
}

// A parameter (of x's dtype) in the compute dtype `cd`, or undefined.
fk::Tensor in_compute_dtype(const fk::Tensor& p, fk::DType cd) {
  if (!p.defined()) return p;
  return (p.dtype() == cd ? p : p.to(cd)).contiguous();
}
template <typename T>
const T* data_or_null(const fk::Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

fk::Tensor device_statistics(const fk::Tensor& x, const Segments& seg,
                             const std::vector<int64_t>& rows, int64_t block_rows, double eps) {
  const int dev = x.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t c = x.size(1), sc = seg.count * c;
  const fk::Tensor d_seg = upload_segments(seg, x.device());
  const fk::Tensor d_rows = seg.count == 1 ? fk::Tensor() : upload(rows, x.device());
  fk::Tensor moments = fk::empty({4, sc}, {fk::DType::F64, x.device()});
  double* m = moments.data<double>();
  void* stream = stream_of(x);
  const int64_t* r = data_or_null<int64_t>(d_rows);
  const int64_t single_rows = rows.empty() ? 0 : rows[0];
  const fk::Tensor sums =
      segment_sums(kValue, x, fk::Tensor(), d_seg, seg.count, block_rows, nullptr, nullptr);
  cuda::launch_norm_moments(0, sums.data<double>(), r, single_rows, eps, m, sc, c, stream);
  const fk::Tensor squares =
      segment_sums(kSquaredDeviation, x, fk::Tensor(), d_seg, seg.count, block_rows, m, nullptr);
  cuda::launch_norm_moments(1, squares.data<double>(), r, single_rows, eps, m, sc, c, stream);
  fk::profile::count_launch(2);
  fk::cuda::after_op(dev);
  return moments;
}

fk::Tensor device_fixed_statistics(const fk::Tensor& mean, const fk::Tensor& var, double eps) {
  const int dev = mean.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t c = mean.numel();
  fk::Tensor moments = fk::zeros({4, c}, {fk::DType::F64, mean.device()});
  moments.select(0, 0).copy_(mean.reshape({c}));
  moments.select(0, 1).copy_(var.reshape({c}));
  cuda::launch_norm_moments(2, nullptr, nullptr, 0, eps, moments.data<double>(), c, c,
                            stream_of(mean));
  fk::profile::count_launch();
  fk::cuda::after_op(dev);
  return moments;
}

fk::Tensor device_upload_statistics(const NormStats& host, int64_t cols, const fk::Device& device) {
  const size_t sc = host.mean.size();
  std::vector<double> flat(host.mean);
  flat.insert(flat.end(), host.var.begin(), host.var.end());
  flat.insert(flat.end(), host.invstd.begin(), host.invstd.end());
  for (size_t k = 0; k < sc; ++k)
    flat.push_back(static_cast<double>(host.rows[k / static_cast<size_t>(cols)]));
  FK_CHECK(flat.size() == 4 * sc, "minkowski::normalize", "mean, var and invstd of equal length",
           fk::to_text(host.mean.size()) + ", " + fk::to_text(host.var.size()) + ", " +
               fk::to_text(host.invstd.size()));
  return fk::from_vector(flat, fk::Dims{4, static_cast<int64_t>(sc)}, device);
}

fk::Tensor device_normalize_forward(const fk::Tensor& x, const Segments& seg,
                                    const fk::Tensor& moments, const fk::Tensor& weight,
                                    const fk::Tensor& bias) {
  const int dev = x.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t c = x.size(1), sc = moments.size(1);
  const fk::Tensor w = in_compute_dtype(weight, x.dtype()), b = in_compute_dtype(bias, x.dtype());
  fk::Tensor coef = fk::empty({4, sc}, {x.dtype(), x.device()});
  with_type(x, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_norm_forward_coefficients<T>(moments.data<double>(), sc, c, data_or_null<T>(w),
                                              data_or_null<T>(b), coef.data<T>(), stream_of(x));
    fk::profile::count_launch();
  });
  fk::Tensor y = segment_affine(x, fk::Tensor(), upload_segments(seg, x.device()), coef);
  fk::cuda::after_op(dev);
  return y;
}

NormGrads device_normalize_backward(const fk::Tensor& g, const fk::Tensor& x, const Segments& seg,
                                    const fk::Tensor& moments, const fk::Tensor& weight,
                                    bool batch_stats, bool need_x, int64_t block_rows) {
  const int dev = x.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t c = x.size(1), sc = moments.size(1);
  const fk::Tensor d_seg = upload_segments(seg, x.device());
  const double* m = moments.data<double>();
  const fk::Tensor sums =
      segment_sums(kGradAndGradXhat, x, g, d_seg, seg.count, block_rows, m, m + 2 * sc);
  const fk::Tensor w = in_compute_dtype(weight, x.dtype());
  const fk::TensorOptions f64{fk::DType::F64, x.device()};
  fk::Tensor coef = fk::empty({5, sc}, {x.dtype(), x.device()});
  NormGrads r;
  r.weight = fk::empty({c}, f64);
  r.bias = fk::empty({c}, f64);
  with_type(x, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_norm_backward_coefficients<T>(
        sums.data<double>(), m, sc, c, seg.count, data_or_null<T>(w), batch_stats, coef.data<T>(),
        r.weight.data<double>(), r.bias.data<double>(), stream_of(x));
    fk::profile::count_launch();
  });
  if (need_x) r.x = segment_affine(x, g, d_seg, coef);
  fk::cuda::after_op(dev);
  return r;
}

void device_running_update(const fk::Tensor& moments, double momentum, double unbias,
                           fk::Tensor& running_mean, fk::Tensor& running_var) {
  const char* where = "minkowski::BatchNorm running statistics";
  const int64_t c = moments.size(1);
  for (const fk::Tensor* t : {&running_mean, &running_var}) {
    FK_CHECK(
        t->device() == moments.device() && t->is_contiguous() && t->numel() == c &&
            (t->dtype() == fk::DType::F32 || t->dtype() == fk::DType::F64) &&
            t->dtype() == running_mean.dtype(),
        where,
        "contiguous f32 or f64 tensors of " + fk::to_text(c) + " values on " +
            moments.device().str(),
        std::string(fk::name(t->dtype())) + " " + t->shape().str() + " on " + t->device().str());
  }
  const int dev = moments.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  with_type(running_mean, [&](auto zero) {
    using S = decltype(zero);
    cuda::launch_norm_running_update<S>(moments.data<double>(), c, momentum, unbias,
                                        running_mean.data<S>(), running_var.data<S>(),
                                        stream_of(moments));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
}

}  // namespace minkowski
