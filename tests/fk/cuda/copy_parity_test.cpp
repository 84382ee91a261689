// Copies, conversions, fills and factories on the device against the CPU (see
// parity.h), bit for bit: strided conversion between every dtype pair,
// contiguous conversion, fills, and the fk ops that copy or make tensors.
#include "parity.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "fk/cuda/kernels.h"

namespace fk::cuda_parity {
namespace {

const std::vector<DType> kAllDtypes = {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16,
                                       DType::F32,  DType::F64, DType::C64, DType::C128};

// Quarters of small integers, exact in every float dtype, so the device and the
// CPU must agree bit for bit (float -> int truncates on both).
Tensor quarters(DType dt) {
  Tensor q = mul(random_of({6, 7}, DType::F64, -3, 3, 51), 4.0).to(DType::I32);
  if (dt == DType::Bool) return gt(q, scalar_tensor(0.0, {DType::I32}));
  if (is_integral(dt)) return q.to(dt);
  return div(q.to(DType::F64), 4.0).to(dt);
}

// launch_copy_strided from a transposed [7, 6] view of every dtype into `to`.
OpCase copy_strided_row(DType to) {
  return {
      .name = std::string("launch_copy_strided_to_") + name(to),
      .dtypes = kAllDtypes,
      .inputs = [](DType from) { return Inputs{quarters(from)}; },
      .device =
          [to](const Inputs& in) {
            Tensor view = in[0].transpose(0, 1);
            Tensor out = device_empty(view.shape(), to);
            cuda::launch_copy_strided(code(view.dtype()), view.data_ptr(), view.strides().data(),
                                      code(to), out.data_ptr(), nullptr, view.dim(),
                                      view.shape().data(), stream());
            return out;
          },
      .reference = [to](const Inputs& in) { return in[0].transpose(0, 1).to(to).contiguous(); },
      .bitwise = true,
  };
}

OpCase convert_row(DType to) {
  return {
      .name = std::string("launch_convert_to_") + name(to),
      .dtypes = {DType::F32},
      .inputs = [](DType dt) { return Inputs{random_of({1000}, dt, -100, 100, 61)}; },
      .device =
          [to](const Inputs& in) {
            Tensor out = device_empty(in[0].shape(), to);
            cuda::launch_convert(code(in[0].dtype()), in[0].data_ptr(), code(to), out.data_ptr(),
                                 in[0].numel(), stream());
            return out;
          },
      .reference = [to](const Inputs& in) { return in[0].to(to); },
      .bitwise = true,
  };
}

// NaN, infinities and values past the integer range convert to its lowest
// value on the device as on the host (CUDA's own conversion saturates).
OpCase convert_specials_row(DType to) {
  OpCase c = convert_row(to);
  c.name = std::string("launch_convert_specials_to_") + name(to);
  c.dtypes = {DType::F32, DType::F64};
  c.inputs = [](DType dt) {
    const double inf = std::numeric_limits<double>::infinity();
    return Inputs{
        from_vector(std::vector<double>{std::nan(""), inf, -inf, 3e9, -3e9, 1e19, 2.7, -2.7, -0.0})
            .to(dt)};
  };
  return c;
}

// launch_fill over 33 elements that held 7 before.
OpCase fill_row(const std::string& tag, double v) {
  return {
      .name = "launch_fill_" + tag,
      .dtypes = kAllDtypes,
      .inputs = [](DType dt) { return Inputs{full({33}, 7.0, {dt})}; },
      .device =
          [v](const Inputs& in) {
            Tensor out = in[0].clone();
            cuda::launch_fill(code(out.dtype()), out.data_ptr(), out.numel(), v, 0, stream());
            return out;
          },
      .reference = [v](const Inputs& in) { return full({33}, v, {in[0].dtype()}); },
      .bitwise = true,
  };
}

// An fk op on a [5, 7] f32 tensor, the same on both devices, bit for bit.
OpCase f32_row(const std::string& name, Fn f) {
  return {
      .name = name,
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{random_of({5, 7}, dt, -1, 1, 7)};
          },
      .device = std::move(f),
      .bitwise = true,
  };
}

// A factory, made on the device and on the CPU.
OpCase factory_row(const std::string& name, std::function<Tensor(Device)> make) {
  return {
      .name = name,
      .dtypes = {DType::F32},
      .inputs = [](DType) { return Inputs{}; },
      .device = [make](const Inputs&) { return make(kGpu); },
      .reference = [make](const Inputs&) { return make(kCPU); },
      .bitwise = true,
  };
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  for (DType to : kAllDtypes) r.push_back(copy_strided_row(to));
  for (DType to : {DType::F16, DType::BF16, DType::F64, DType::I32, DType::C64}) {
    r.push_back(convert_row(to));
  }
  r.push_back(convert_specials_row(DType::I32));
  r.push_back(convert_specials_row(DType::I64));
  r.push_back(fill_row("0", 0.0));
  r.push_back(fill_row("2_5", 2.5));
  // Every other column of a [4, 6] buffer.
  r.push_back({
      .name = "launch_fill_strided",
      .dtypes = {DType::F32},
      .inputs =
          [](DType dt) {
            return Inputs{zeros({4, 6}, {dt})};
          },
      .device =
          [](const Inputs& in) {
            Tensor base = in[0].clone(), view = base.slice(1, 0, 6, 2);
            cuda::launch_fill_strided(cuda::kF32, view.data_ptr(), view.dim(), view.shape().data(),
                                      view.strides().data(), 7.0, 0, stream());
            return base;
          },
      .reference =
          [](const Inputs&) {
            std::vector<float> v(24);
            for (int i = 0; i < 24; ++i) v[i] = i % 2 == 0 ? 7.0f : 0.0f;
            return from_vector(v, {4, 6});
          },
      .bitwise = true,
  });
  r.push_back(f32_row("to_device", [](const Inputs& in) { return in[0]; }));
  r.push_back(
      f32_row("contiguous_of_transpose", [](const Inputs& in) { return in[0].t().contiguous(); }));
  for (DType to : {DType::F16, DType::BF16, DType::F64, DType::I32}) {
    r.push_back(
        f32_row(std::string("to_") + name(to), [to](const Inputs& in) { return in[0].to(to); }));
  }
  r.push_back(factory_row("full", [](Device d) { return full({3, 2}, 2.5, {DType::F64, d}); }));
  // Made on the host and copied: the same values as on the CPU.
  r.push_back(factory_row("arange", [](Device d) {
    return arange(2.0, 9.0, 1.5, {DType::F32, d});
  }));
  r.push_back(factory_row("linspace", [](Device d) {
    return linspace(-1, 1, 7, {DType::F64, d});
  }));
  r.push_back(factory_row("eye", [](Device d) { return eye(3, {DType::F32, d}); }));
  r.push_back(factory_row("randn", [](Device d) {
    Generator g(5);
    return randn({3, 4}, {DType::F32, d}, &g);
  }));
  r.push_back(factory_row("randint", [](Device d) {
    Generator g(5);
    return randint(0, 9, {6}, {DType::I64, d}, &g);
  }));
  r.push_back(factory_row("randperm", [](Device d) {
    Generator g(5);
    return randperm(7, {DType::I64, d}, &g);
  }));
  return r;
}

FK_PARITY_TABLE(Copy, rows());

}  // namespace
}  // namespace fk::cuda_parity
