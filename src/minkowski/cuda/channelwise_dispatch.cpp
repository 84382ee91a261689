// The channelwise convolution's device path (ops/conv_channelwise_device.h):
// the map's device copy, the offset and block bounds uploaded, channelwise.cu's
// kernels (and pooling.cu's ordered combine of the weight partials) on the
// current stream.
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/conv_channelwise_device.h"
#include "minkowski/ops/conv_kernel_common.h"
#include "minkowski/ops/pooling.h"

namespace minkowski {

namespace {

using cuda_dispatch::upload;
using cuda_dispatch::with_type;

const int32_t* i32(const fk::Tensor& t) {
  return t.data<int32_t>();
}
const int64_t* i64(const fk::Tensor& t) {
  return t.data<int64_t>();
}

// The CPU's weight-gradient jobs: each offset's pairs in blocks of
// kWeightBlock. Jobs tile the pairs in order (job j is [begin[j], begin[j + 1]));
// first[k] is offset k's first job, first[K] the job count.
struct WeightJobs {
  std::vector<int64_t> begin, first;
};
WeightJobs weight_jobs(const std::vector<int64_t>& offset_begin) {
  const int64_t volume = static_cast<int64_t>(offset_begin.size()) - 1;
  WeightJobs w;
  for (int64_t k = 0; k < volume; ++k) {
    w.first.push_back(static_cast<int64_t>(w.begin.size()));
    for (int64_t p = offset_begin[k]; p < offset_begin[k + 1]; p += conv_detail::kWeightBlock)
      w.begin.push_back(p);
  }
  w.first.push_back(static_cast<int64_t>(w.begin.size()));
  w.begin.push_back(offset_begin[volume]);
  return w;
}

}  // namespace

fk::Tensor device_channelwise_forward(const fk::Tensor& features, const fk::Tensor& weight,
                                      const KernelMap& map) {
  const int dev = features.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const cuda::DeviceKernelMap& m = cuda::device_copy_of(map, dev);
  const int64_t c = features.size(1);
  const fk::Tensor ob = upload(m.offset_begin, features.device());
  fk::Tensor out = fk::empty({m.out_size, c}, {features.dtype(), features.device()});
  with_type(features, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_channelwise_rows<T>(features.data<T>(), weight.data<T>(), c, i32(m.by_out.begin),
                                     i32(m.by_out.pair), i32(m.in_rows), i64(ob), m.volume,
                                     m.out_size, out.data<T>(), fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return out;
}

ConvGrads device_channelwise_backward(const fk::Tensor& grad_out, const fk::Tensor& features,
                                      const fk::Tensor& weight, const KernelMap& map,
                                      bool need_features, bool need_weight) {
  const int dev = features.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const cuda::DeviceKernelMap& m = cuda::device_copy_of(map, dev);
  const int64_t c = features.size(1);
  const fk::TensorOptions values{features.dtype(), features.device()};
  void* stream = fk::cuda::current_stream(dev);
  ConvGrads r;
  if (need_features) {
    const fk::Tensor ob = upload(m.offset_begin, features.device());
    r.features = fk::empty({m.in_size, c}, values);
    with_type(features, [&](auto zero) {
      using T = decltype(zero);
      cuda::launch_channelwise_rows<T>(grad_out.data<T>(), weight.data<T>(), c, i32(m.by_in.begin),
                                       i32(m.by_in.pair), i32(m.out_rows), i64(ob), m.volume,
                                       m.in_size, r.features.data<T>(), stream);
      fk::profile::count_launch();
    });
  }
  if (need_weight) {
    const WeightJobs jobs = weight_jobs(m.offset_begin);
    const int64_t n_jobs = static_cast<int64_t>(jobs.begin.size()) - 1;
    const fk::Tensor d_begin = upload(jobs.begin, features.device());
    const fk::Tensor d_first = upload(jobs.first, features.device());
    fk::Tensor part = fk::empty({n_jobs, c}, values);
    r.weight = fk::empty({m.volume, c}, values);
    with_type(features, [&](auto zero) {
      using T = decltype(zero);
      cuda::launch_pair_product_partials<T>(features.data<T>(), grad_out.data<T>(), c,
                                            i32(m.in_rows), i32(m.out_rows), i64(d_begin), n_jobs,
                                            part.data<T>(), stream);
      fk::profile::count_launch();
      // Sum mode reads neither arg-max rows nor group sizes.
      cuda::launch_group_combine<T>(static_cast<int>(PoolingMode::Sum), part.data<T>(), nullptr,
                                    i64(d_first), nullptr, m.volume, c, r.weight.data<T>(), nullptr,
                                    stream);
      fk::profile::count_launch();
    });
  }
  fk::cuda::after_op(dev);
  return r;
}

}  // namespace minkowski
