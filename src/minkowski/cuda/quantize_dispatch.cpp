// MaxPool quantization's device half (ops/quantize_device.h): the groups'
// member lists built on the host and uploaded, then pooling.cu's max kernel
// over them (its arg-max rows are the answer).
#include <string>
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/ops/quantize_device.h"

namespace minkowski {

using cuda_dispatch::upload;
using cuda_dispatch::with_type;

fk::Tensor device_group_argmax(const fk::Tensor& features, const std::vector<int64_t>& group,
                               int64_t groups) {
  const char* where = "minkowski::quantize";
  const int64_t n = static_cast<int64_t>(group.size()), c = features.size(1);
  FK_CHECK(n < INT32_MAX, where, "fewer than 2^31 rows on a CUDA device", fk::to_text(n));
  // Each group's rows, ascending (a stable counting sort): begin (groups + 1), members.
  std::vector<int32_t> begin(static_cast<size_t>(groups) + 1, 0), members(static_cast<size_t>(n));
  for (int64_t r : group) ++begin[r + 1];
  for (int64_t g = 0; g < groups; ++g) begin[g + 1] += begin[g];
  std::vector<int32_t> fill(begin.begin(), begin.end() - 1);
  for (int64_t i = 0; i < n; ++i) members[fill[group[i]]++] = static_cast<int32_t>(i);

  const int dev = features.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const fk::Tensor f =
      features.to(features.dtype() == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32)
          .contiguous();
  const fk::Tensor d_begin = upload(begin, f.device()), d_members = upload(members, f.device());
  // The pooling kernel reads rows through pair ids: here pair q is member q.
  fk::Tensor pairs = fk::empty({n}, {fk::DType::I32, f.device()});
  fk::Tensor max = fk::empty({groups, c}, {f.dtype(), f.device()});
  fk::Tensor arg = fk::empty({groups, c}, {fk::DType::I32, f.device()});
  void* stream = fk::cuda::current_stream(dev);
  cuda::launch_iota(pairs.data<int32_t>(), n, stream);
  fk::profile::count_launch();
  with_type(f, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_pool_forward<T>(static_cast<int>(PoolingMode::Max), f.data<T>(), c,
                                 d_begin.data<int32_t>(), pairs.data<int32_t>(),
                                 d_members.data<int32_t>(), groups, max.data<T>(),
                                 arg.data<int32_t>(), stream);
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return arg.to(fk::DType::I64);
}

}  // namespace minkowski
