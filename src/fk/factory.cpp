#include "fk/factory.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include "fk/autograd.h"
#include "fk/cuda/kernels.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/half.h"
#include "fk/object_pool.h"
#include "fk/ops/copy.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/profile.h"

namespace fk {

Tensor empty(const Dims& shape, TensorOptions o) {
  for (int64_t d : shape) {
    FK_CHECK(d >= 0, "empty", "non-negative sizes", shape.str());
  }
  // A product of sizes past int64 wrapped to a small or zero numel (a shape
  // of [2^32, 2^32] made an empty tensor, [2^62] of c128 a division by zero);
  // 0s count as 1, as contiguous strides count them.
  int64_t bytes = static_cast<int64_t>(itemsize(o.dtype));
  for (int64_t d : shape) {
    FK_CHECK(!__builtin_mul_overflow(bytes, std::max<int64_t>(d, 1), &bytes), "empty",
             "a shape of fewer than 2^63 bytes", shape.str() + " of " + name(o.dtype));
  }
  if (o.device.is_cuda()) {
    FK_CHECK(o.device.index < cuda::device_count(), "tensor device",
             "an available device (CUDA devices: " + fk::to_text(cuda::device_count()) + ")",
             o.device.str());
  }
  size_t nbytes = static_cast<size_t>(shape.numel()) * itemsize(o.dtype);
  auto storage = std::allocate_shared<Storage>(PoolAllocator<Storage>(), o.device, nbytes);
  Tensor t = make_tensor(std::move(storage), o.dtype, shape, contiguous_strides(shape), 0);
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

namespace {
template <typename T>
T cast_scalar(c128 v) {
  if constexpr (std::is_same_v<T, c64>) {
    return c64(static_cast<float>(v.real()), static_cast<float>(v.imag()));
  } else if constexpr (std::is_same_v<T, c128>) {
    return v;
  } else {
    return static_cast<T>(v.real());
  }
}
}  // namespace

void fill_(Tensor& t, c128 value) {
  FK_CHECK(!autograd::needs_grad(t), "fill_",
           "a tensor that does not require grad, or no_grad mode (in-place ops are not recorded "
           "by autograd)",
           "a tensor that requires grad");
  profile::OpScope op("fill_");
  // A real tensor holds no imaginary part: dropped, it went without a word
  // (torch refuses a complex value there).
  FK_CHECK(is_complex(t.dtype()) || value.imag() == 0.0, "fill_",
           std::string("a real value for a ") + name(t.dtype()) + " tensor",
           fmt::format("({}, {})", value.real(), value.imag()));
  // An integer holds the value truncated, as torch's fill; a NaN, an infinity
  // or a value past the range has no integer (the cast is undefined: it wrote
  // INT_MIN), and torch refuses it too.
  if (t.dtype() == DType::I32 || t.dtype() == DType::I64) {
    const double v = value.real();
    const bool fits = t.dtype() == DType::I32
                          ? v > -2147483649.0 && v < 2147483648.0
                          : v >= -9223372036854775808.0 && v < 9223372036854775808.0;
    FK_CHECK(fits, "fill_", std::string("a value ") + name(t.dtype()) + " holds",
             fmt::format("{}", v));
  }
  // A finite value past a float type's largest would be stored as inf (torch
  // refuses it too); infinities and NaN are values of every float type.
  // A c64 holds two f32s: both parts are checked.
  if (t.dtype() == DType::F16 || t.dtype() == DType::BF16 || t.dtype() == DType::F32 ||
      t.dtype() == DType::C64) {
    const double largest = t.dtype() == DType::F16    ? 65504.0
                           : t.dtype() == DType::BF16 ? 3.3895313892515355e38
                                                      : 3.4028234663852886e38;
    const bool two_parts = t.dtype() == DType::C64;
    for (const double v : {value.real(), two_parts ? value.imag() : 0.0})
      FK_CHECK(
          !std::isfinite(v) || std::abs(v) <= largest, "fill_",
          fmt::format("a value {} holds (|v| <= {:g}, or an infinity)", name(t.dtype()), largest),
          fmt::format("{}", v));
  }
  if (t.device().is_cuda()) {
    t.bump_version();
    cuda::launch_fill_strided(static_cast<int>(t.dtype()), t.data_ptr(), t.dim(), t.shape().data(),
                              t.strides().data(), value.real(), value.imag(),
                              cuda_ops::stream_of(t));
    cuda_ops::launched(t);
    return;
  }
  t.bump_version();
  if (is_half(t.dtype())) {
    const float f = double_to_f32_odd(value.real());  // then correctly rounded (half.h)
    uint16_t bits = t.dtype() == DType::F16 ? float_to_half(f).bits : float_to_bf16(f).bits;
    cpu::map1<uint16_t, uint16_t>(t, t, [bits](uint16_t) { return bits; });
    return;
  }
  if (t.dtype() == DType::Bool) {
    // As bytes: the loop also loads the (possibly uninitialised) old values,
    // and a bool load of anything but 0 or 1 is undefined behaviour.
    uint8_t b = value != c128(0.0, 0.0) ? 1 : 0;
    cpu::map1<uint8_t, uint8_t>(t, t, [b](uint8_t) { return b; });
    return;
  }
  cpu::visit_stored(t.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T v = cast_scalar<T>(value);
    cpu::map1<T, T>(t, t, [v](T) { return v; });
  });
}

void fill_(Tensor& t, double value) {
  fill_(t, c128(value, 0.0));
}

Tensor full(const Dims& shape, c128 value, TensorOptions o) {
  Tensor t = empty(shape, {o.dtype, o.device});
  fill_(t, value);
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor full(const Dims& shape, double value, TensorOptions o) {
  return full(shape, c128(value, 0.0), o);
}
Tensor zeros(const Dims& shape, TensorOptions o) {
  return full(shape, 0.0, o);
}
Tensor ones(const Dims& shape, TensorOptions o) {
  return full(shape, 1.0, o);
}
Tensor scalar_tensor(double value, TensorOptions o) {
  return full(Dims{}, value, o);
}

Tensor arange(double start, double end, double step, TensorOptions o) {
  FK_CHECK(step != 0, "arange", "a non-zero step", "0");
  // A NaN, infinite or huge count was converted undefined (to INT64_MIN,
  // then clamped: an empty tensor); torch refuses them too.
  const double count = std::ceil((end - start) / step);
  FK_CHECK(std::isfinite(count) && count < 9.2e18, "arange", "a finite range of at most 2^63 steps",
           fmt::format("{} -> {} by {}", start, end, step));
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(count), 0);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = start + static_cast<double>(i) * step;
  Tensor t = from_vector(v, {n}).to(o.dtype).to(o.device);
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor arange(int64_t end, TensorOptions o) {
  return arange(0.0, static_cast<double>(end), 1.0, o);
}

Tensor linspace(double start, double end, int64_t steps, TensorOptions o) {
  FK_CHECK(steps >= 0, "linspace", "steps >= 0", fk::to_text(steps));
  std::vector<double> v(static_cast<size_t>(steps));
  double h = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  // Fill from both ends so the last point is exactly `end` (one point is
  // `start`, as torch's and numpy's).
  for (int64_t i = 0; i < steps; ++i) {
    v[i] = i < steps / 2 || steps == 1 ? start + h * static_cast<double>(i)
                                       : end - h * static_cast<double>(steps - 1 - i);
  }
  Tensor t = from_vector(v, {steps}).to(o.dtype).to(o.device);
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor eye(int64_t n, TensorOptions o) {
  // n * n is checked before it sizes anything (it wrapped past int64: a
  // vector of 0 written out of bounds).
  int64_t cells = 0;
  FK_CHECK(n >= 0 && !__builtin_mul_overflow(n, n, &cells) && cells <= (int64_t{1} << 40), "eye",
           "n >= 0 with n * n at most 2^40", fk::to_text(n));
  std::vector<double> v(static_cast<size_t>(cells), 0.0);
  for (int64_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
  Tensor t = from_vector(v, {n, n}).to(o.dtype).to(o.device);
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

Tensor from_blob_copy(const void* data, const Dims& shape, DType dtype, Device device) {
  Tensor t = empty(shape, {dtype, kCPU});
  if (t.nbytes() > 0) std::memcpy(t.data_ptr(), data, static_cast<size_t>(t.nbytes()));
  return device.is_cpu() ? t : t.to(device);
}

template <typename T>
Tensor from_vector(const std::vector<T>& data, const Dims& shape, Device device) {
  FK_CHECK(static_cast<int64_t>(data.size()) == shape.numel(), "from_vector",
           fk::to_text(shape.numel()) + " values for shape " + shape.str(),
           fk::to_text(data.size()));
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(data.begin(), data.end());
    return from_blob_copy(bytes.data(), shape, DType::Bool, device);
  } else {
    return from_blob_copy(data.data(), shape, dtype_of<T>(), device);
  }
}
template Tensor from_vector(const std::vector<bool>&, const Dims&, Device);
template Tensor from_vector(const std::vector<int32_t>&, const Dims&, Device);
template Tensor from_vector(const std::vector<int64_t>&, const Dims&, Device);
template Tensor from_vector(const std::vector<float>&, const Dims&, Device);
template Tensor from_vector(const std::vector<double>&, const Dims&, Device);
template Tensor from_vector(const std::vector<c64>&, const Dims&, Device);
template Tensor from_vector(const std::vector<c128>&, const Dims&, Device);
template Tensor from_vector(const std::vector<Half>&, const Dims&, Device);
template Tensor from_vector(const std::vector<BFloat16>&, const Dims&, Device);

Tensor empty_like(const Tensor& t) {
  return empty(t.shape(), {t.dtype(), t.device()});
}
Tensor empty_like(const Tensor& t, DType dtype) {
  return empty(t.shape(), {dtype, t.device()});
}
Tensor zeros_like(const Tensor& t) {
  return zeros(t.shape(), {t.dtype(), t.device()});
}
Tensor ones_like(const Tensor& t) {
  return ones(t.shape(), {t.dtype(), t.device()});
}
Tensor full_like(const Tensor& t, double v) {
  return full(t.shape(), v, {t.dtype(), t.device()});
}

}  // namespace fk
