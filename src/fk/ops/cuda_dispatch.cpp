#include "fk/ops/cuda_dispatch.h"

#include "fk/cuda/runtime.h"
#include "fk/profile.h"

namespace fk::cuda_ops {

Dims broadcast_strides(const Tensor& t, const Dims& shape) {
  Dims s = Dims::filled(shape.size(), 0);
  for (int i = 0; i < shape.size(); ++i) {
    int td = t.dim() - (shape.size() - i);
    if (td >= 0 && t.shape()[td] != 1) s[i] = t.strides()[td];
  }
  return s;
}

void* stream_of(const Tensor& t) {
  return cuda::current_stream(t.device().index);
}

void launched(const Tensor& t) {
  profile::count_launch();
  cuda::after_op(t.device().index);
}

}  // namespace fk::cuda_ops
