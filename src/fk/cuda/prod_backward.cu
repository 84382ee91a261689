// The gradient of prod along rows (see kernels.h): each output element needs
// the product of every other element of its row, which a division by x[i]
// would get wrong at zeros. One thread walks its row twice, keeping the
// running product before i and after i, in the CPU's order.
#include "fk/cuda/common.cuh"

namespace fk::cuda {
namespace {
using namespace detail;

// The multiplicative unit and the conjugate, for real and complex element types.
template <typename T>
struct Field {
  __device__ static T one() { return T(1); }
  __device__ static T conj(T v) { return v; }
};
template <typename R>
struct Field<Cx<R>> {
  __device__ static Cx<R> one() { return Cx<R>{R(1), R(0)}; }
  __device__ static Cx<R> conj(Cx<R> v) { return Cx<R>{v.re, -v.im}; }
};

template <typename T>
__global__ void prod_backward_rows(const T* x, const T* grad, T* grad_in, int64_t outer,
                                   int64_t inner) {
  FK_CUDA_LOOP(o, outer) {
    const T* row = x + o * inner;
    T* grow = grad_in + o * inner;
    T before = Field<T>::one();
    for (int64_t i = 0; i < inner; ++i) {
      grow[i] = before;
      before = before * row[i];
    }
    const T g = grad[o];
    T after = Field<T>::one();
    for (int64_t i = inner - 1; i >= 0; --i) {
      const T others = grow[i] * after;
      grow[i] = g * Field<T>::conj(others);
      after = after * row[i];
    }
  }
}

template <typename T>
void launch_rows(const void* x, const void* grad, void* grad_in, int64_t outer, int64_t inner,
                 void* stream) {
  prod_backward_rows<T><<<blocks_for(outer), kThreads, 0, as_stream(stream)>>>(
      static_cast<const T*>(x), static_cast<const T*>(grad), static_cast<T*>(grad_in), outer,
      inner);
}

}  // namespace

void launch_prod_backward_lastdim(int dtype, const void* x, const void* grad, void* grad_in,
                                  int64_t outer, int64_t inner, void* stream) {
  const char* where = "cuda::launch_prod_backward_lastdim";
  FK_CHECK(outer >= 0 && inner >= 0, where, "outer, inner >= 0",
           fk::to_text(outer) + ", " + fk::to_text(inner));
  if (outer == 0 || inner == 0) return;
  switch (dtype) {
    case kF32:
      launch_rows<float>(x, grad, grad_in, outer, inner, stream);
      break;
    case kF64:
      launch_rows<double>(x, grad, grad_in, outer, inner, stream);
      break;
    case kC64:
      launch_rows<Cx<float>>(x, grad, grad_in, outer, inner, stream);
      break;
    case kC128:
      launch_rows<Cx<double>>(x, grad, grad_in, outer, inner, stream);
      break;
    default:
      unsupported(where, "f32, f64, c64 or c128", dtype);
  }
  check_launch(where);
}

}  // namespace fk::cuda
