// spmm's device products (ops/spmm_device.h): the host grouping uploaded,
// then spmm.cu's kernels on the current stream.
#include <vector>

#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "minkowski/cuda/dispatch_util.h"
#include "minkowski/cuda/kernels.h"
#include "minkowski/ops/spmm_device.h"

namespace minkowski {

using cuda_dispatch::upload;
using cuda_dispatch::with_type;

fk::Tensor device_spmm_rows(const std::vector<int64_t>& begin, const std::vector<int64_t>& order,
                            const std::vector<int64_t>& from, const fk::Tensor& values,
                            const fk::Tensor& in) {
  const int dev = in.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t rows = static_cast<int64_t>(begin.size()) - 1, c = in.size(1);
  std::vector<int64_t> src(order.size());  // the input row of each grouped entry
  for (size_t e = 0; e < order.size(); ++e) src[e] = from[order[e]];
  const fk::Tensor d_begin = upload(begin, in.device()), d_order = upload(order, in.device());
  const fk::Tensor d_src = upload(src, in.device());
  fk::Tensor out = fk::empty({rows, c}, {in.dtype(), in.device()});  // every row written
  with_type(in, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_csr_rows<T>(d_begin.data<int64_t>(), d_order.data<int64_t>(),
                             d_src.data<int64_t>(), values.data<T>(), in.data<T>(), c, rows,
                             out.data<T>(), fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return out;
}

fk::Tensor device_spmm_value_grads(const std::vector<int64_t>& rows,
                                   const std::vector<int64_t>& cols, const fk::Tensor& grad,
                                   const fk::Tensor& dense) {
  const int dev = dense.device().index;
  fk::cuda::detail::DeviceGuard guard(dev);
  const int64_t nnz = static_cast<int64_t>(rows.size());
  const fk::Tensor d_rows = upload(rows, dense.device()), d_cols = upload(cols, dense.device());
  fk::Tensor out = fk::empty({nnz}, {dense.dtype(), dense.device()});
  with_type(dense, [&](auto zero) {
    using T = decltype(zero);
    cuda::launch_row_dots<T>(d_rows.data<int64_t>(), d_cols.data<int64_t>(), grad.data<T>(),
                             dense.data<T>(), dense.size(1), nnz, out.data<T>(),
                             fk::cuda::current_stream(dev));
    fk::profile::count_launch();
  });
  fk::cuda::after_op(dev);
  return out;
}

}  // namespace minkowski
