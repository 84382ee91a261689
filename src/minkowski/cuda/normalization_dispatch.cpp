// The device passes of segment normalization (ops/normalization_device.h):
// segments (unless there is one) and statistics uploaded, normalization.cu's kernels on the
// current stream, the sums read back.
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/normalization_device.h"

namespace minkowski {

namespace {

static_assert(static_cast<int>(SegmentTerm::Value) == 0 &&
              static_cast<int>(SegmentTerm::SquaredDeviation) == 1 &&
              static_cast<int>(SegmentTerm::GradAndGradXhat) == 2);

using cuda_dispatch::upload;
using cuda_dispatch::with_type;

// Statistics the term reads (an empty vector: none, nothing uploaded).
fk::Tensor upload_or_none(const std::vector<double>& v, const fk::Device& device) {
  return v.empty() ? fk::Tensor() : upload(v, device);
}
const double* f64_or_null(const fk::Tensor& t) {
  return t.defined() ? t.data<double>() : nullptr;
}

// The rows' segments on the device; none (null: every row in segment 0, as
// normalization.cu reads it) for a single segment, BatchNorm's case.
fk::Tensor upload_segments(const Segments& seg, const fk::Device& device) {
  return seg.count == 1 ? fk::Tensor() : upload(seg.of_row, device);
}
const int32_t* i32_or_null(const fk::Tensor& t) {
  return t.defined() ? t.data<int32_t>() : nullptr;
}

}  // namespace

std::vector<double> device_segment_sums(SegmentTerm term, const fk::Tensor& x, const fk::Tensor& g,
                                        const Segments& seg, int64_t block_rows,
                                        const std::vector<double>& mean,
                                        const std::vector<double>& invstd) {
  const int dev = x.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t n = x.size(0), c = x.size(1), blocks = (n + block_rows - 1) / block_rows;
  const int64_t width = (term == SegmentTerm::GradAndGradXhat ? 2 : 1) * seg.count * c;
  const fk::TensorOptions f64{fk::DType::F64, x.device()};
  const fk::Tensor d_seg = upload_segments(seg, x.device());
  const fk::Tensor d_mean = upload_or_none(mean, x.device());
  const fk::Tensor d_invstd = upload_or_none(invstd, x.device());
  fk::Tensor part = fk::zeros({blocks, width}, f64), out = fk::zeros({width}, f64);
  void* stream = fk::cuda::current_stream(dev);
  with_type(x, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_segment_sums<T>(static_cast<int>(term), x.data<T>(),
                                 g.defined() ? g.data<T>() : nullptr, n, c, i32_or_null(d_seg),
                                 seg.count, block_rows, f64_or_null(d_mean), f64_or_null(d_invstd),
                                 part.data<double>(), stream);
    fk::profile::count_launch();
  });
  cuda::launch_sum_blocks(part.data<double>(), blocks, width, out.data<double>(), stream);
  fk::profile::count_launch();
  fk::cuda::after_op(dev);
  return out.to_vector<double>();
}

fk::Tensor device_segment_affine(const fk::Tensor& x, const fk::Tensor& g, const Segments& seg,
                                 const fk::Tensor& coef) {
  const int dev = x.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t n = x.size(0), c = x.size(1);
  const fk::Tensor d_seg = upload_segments(seg, x.device());
  const fk::Tensor d_coef = coef.to(x.device()).contiguous();
  fk::Tensor y = fk::empty({n, c}, {x.dtype(), x.device()});
  with_type(x, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_segment_affine<T>(x.data<T>(), g.defined() ? g.data<T>() : nullptr, n, c,
                                   i32_or_null(d_seg), d_coef.data<T>(), d_coef.size(1),
                                   y.data<T>(), fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return y;
}

}  // namespace minkowski
