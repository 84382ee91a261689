// The device paths of local and global pooling (ops/pooling_device.h): the
// map's device copy or the uploaded row groups, then pooling.cu's kernels on
// the current stream.
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/device_kernel_map.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/pooling_device.h"

namespace minkowski {

namespace {

static_assert(static_cast<int>(PoolingMode::Max) == 0 &&
              static_cast<int>(PoolingMode::Average) == 1 &&
              static_cast<int>(PoolingMode::Sum) == 2);

using cuda_dispatch::upload;
using cuda_dispatch::with_type;

// The arg-max rows a Max backward reads (checked on the gradient's device by the caller).
const int32_t* argmax_rows(const fk::Tensor& argmax, PoolingMode mode, fk::Tensor* keep) {
  if (mode != PoolingMode::Max) return nullptr;
  *keep = argmax.contiguous();
  return keep->data<int32_t>();
}

int32_t* i32(const fk::Tensor& t) {
  return t.defined() ? t.data<int32_t>() : nullptr;
}
int64_t* i64(const fk::Tensor& t) {
  return t.data<int64_t>();
}

}  // namespace

PoolingResult device_pool_forward(const fk::Tensor& f, const KernelMap& map, PoolingMode mode) {
  const int dev = f.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const cuda::DeviceKernelMap& m = cuda::device_copy_of(map, dev);
  const int64_t c = f.size(1);
  PoolingResult r;
  r.out = fk::empty({m.out_size, c}, {f.dtype(), f.device()});  // every row written
  if (mode == PoolingMode::Max) r.argmax = fk::empty({m.out_size, c}, {fk::DType::I32, f.device()});
  with_type(f, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_pool_forward<T>(static_cast<int>(mode), f.data<T>(), c, i32(m.by_out.begin),
                                 i32(m.by_out.pair), i32(m.in_rows), m.out_size, r.out.data<T>(),
                                 i32(r.argmax), fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return r;
}

fk::Tensor device_pool_backward(const fk::Tensor& g, const KernelMap& map, PoolingMode mode,
                                const fk::Tensor& argmax) {
  const int dev = g.device().index;
  fk::Tensor a;
  const int32_t* amax = argmax_rows(argmax, mode, &a);
  fk::cuda::detail::DeviceGuard guard(dev);
  const cuda::DeviceKernelMap& m = cuda::device_copy_of(map, dev);
  const int64_t c = g.size(1);
  fk::Tensor gin = fk::empty({m.in_size, c}, {g.dtype(), g.device()});  // every row written
  with_type(g, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_pool_backward<T>(static_cast<int>(mode), g.data<T>(), c, i32(m.by_in.begin),
                                  i32(m.by_in.pair), i32(m.out_rows), i32(m.by_out.begin), amax,
                                  m.in_size, gin.data<T>(), fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return gin;
}

GlobalPoolingResult device_global_pool_forward(const fk::Tensor& a, const fk::Tensor& b,
                                               const RowGroups& rg, PoolingMode mode) {
  const int dev = a.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  // The CPU's jobs: each group's rows in blocks of kGlobalBlock; job j ends
  // where job j + 1 starts (empty groups have none), the last at the end.
  std::vector<int64_t> job_begin, first(static_cast<size_t>(rg.groups + 1));
  for (int64_t g = 0; g < rg.groups; ++g) {
    first[g] = static_cast<int64_t>(job_begin.size());
    for (int64_t p = rg.begin[g]; p < rg.begin[g + 1]; p += kGlobalBlock) job_begin.push_back(p);
  }
  const int64_t jobs = static_cast<int64_t>(job_begin.size());
  first[rg.groups] = jobs;
  job_begin.push_back(static_cast<int64_t>(rg.rows.size()));
  const fk::Tensor d_rows = upload(rg.rows, a.device()), d_jobs = upload(job_begin, a.device());
  const fk::Tensor d_first = upload(first, a.device()), d_begin = upload(rg.begin, a.device());
  const int64_t c = a.size(1);
  const bool max = mode == PoolingMode::Max;
  const fk::TensorOptions values{a.dtype(), a.device()}, rows{fk::DType::I32, a.device()};
  fk::Tensor part = fk::empty({jobs, c}, values);
  fk::Tensor part_arg = max ? fk::empty({jobs, c}, rows) : fk::Tensor();
  GlobalPoolingResult r;
  r.out = fk::empty({rg.groups, c}, values);
  if (max) r.argmax = fk::empty({rg.groups, c}, rows);
  void* stream = fk::cuda::current_stream(dev);
  with_type(a, [&](auto zero) {
    using T = decltype(zero);
    const int m = static_cast<int>(mode);
    cuda::launch_group_partials<T>(m, a.data<T>(), b.defined() ? b.data<T>() : nullptr, c,
                                   i32(d_rows), i64(d_jobs), jobs, part.data<T>(), i32(part_arg),
                                   stream);
    fk::profile::count_launch();
    cuda::launch_group_combine<T>(m, part.data<T>(), i32(part_arg), i64(d_first), i64(d_begin),
                                  rg.groups, c, r.out.data<T>(), i32(r.argmax), stream);
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return r;
}

fk::Tensor device_global_pool_backward(const fk::Tensor& g, const RowGroups& rg, PoolingMode mode,
                                       const fk::Tensor& argmax) {
  const int dev = g.device().index;
  fk::Tensor a;
  const int32_t* amax = argmax_rows(argmax, mode, &a);
  fk::cuda::detail::DeviceGuard guard(dev);
  const fk::Tensor d_group = upload(rg.group, g.device()), d_begin = upload(rg.begin, g.device());
  const int64_t n = static_cast<int64_t>(rg.group.size()), c = g.size(1);
  fk::Tensor gin = fk::empty({n, c}, {g.dtype(), g.device()});
  with_type(g, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_group_backward<T>(static_cast<int>(mode), g.data<T>(), c, i32(d_group),
                                   i64(d_begin), amax, n, gin.data<T>(),
                                   fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return gin;
}

}  // namespace minkowski
