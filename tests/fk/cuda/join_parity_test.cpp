// cat, stack, split, pad, roll and flip on the device against the CPU (see
// parity.h): values and gradients, strided operands, promotion, empty parts.
#include "parity.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fk::cuda_parity {
namespace {

Inputs a_and_b(DType dt) {
  return {random_of({3, 2}, dt, -1, 1, 41), random_of({3, 4}, dt, -1, 1, 42)};
}
Inputs x_3x4(DType dt) {
  return {random_of({3, 4}, dt, -1, 1, 51)};
}

// An fk op in f64 with its gradients, within tol relative to 1 + |want| (0: exact).
OpCase f64_row(std::string name, std::function<Inputs(DType)> inputs, Fn f, double tol) {
  return {
      .name = std::move(name),
      .dtypes = {DType::F64},
      .inputs = std::move(inputs),
      .device = std::move(f),
      .tol = [tol](DType) { return near(tol); },
      .grad = true,
  };
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  r.push_back(f64_row(
      "cat_dim1", a_and_b,
      [](const Inputs& in) {
        return cat({in[0], in[1], in[0]}, 1);
      },
      0));
  r.push_back(f64_row(
      "cat_of_transposes", a_and_b,
      [](const Inputs& in) {
        return cat({in[0].t(), in[1].t()}, 0);
      },
      0));
  r.push_back(f64_row(
      "stack", a_and_b,
      [](const Inputs& in) {
        return stack({in[0], mul(in[0], 2.0)}, 1);
      },
      1e-12));
  r.push_back(f64_row(
      "split", a_and_b,
      [](const Inputs& in) {
        return mul(split(in[1], {1, 2, 1}, 1)[1], 3.0);
      },
      1e-12));
  OpCase promote = f64_row(
      "cat_f32_and_f64",
      [](DType dt) {
        return Inputs{a_and_b(dt)[0].to(DType::F32), a_and_b(dt)[1]};
      },
      [](const Inputs& in) {
        return cat({in[0], in[1]}, 1);
      },
      0);
  promote.grad = false;
  r.push_back(promote);
  r.push_back(f64_row(
      "cat_with_empty", a_and_b,
      [](const Inputs& in) {
        return cat({in[0], zeros({3, 0}, {DType::F64, in[0].device()})}, 1);
      },
      0));
  for (PadMode mode :
       {PadMode::Constant, PadMode::Reflect, PadMode::Replicate, PadMode::Circular}) {
    r.push_back(f64_row(
        std::string("pad_") + name(mode), x_3x4,
        [mode](const Inputs& in) {
          return pad(in[0], {1, 2, 2, 1}, mode, 1.5);
        },
        1e-12));
    r.push_back(f64_row(
        std::string("pad_of_transpose_") + name(mode), x_3x4,
        [mode](const Inputs& in) {
          return pad(in[0].t(), {0, 2}, mode, -2.0);
        },
        1e-12));
  }
  r.push_back(f64_row(
      "pad_with_crops", x_3x4,
      [](const Inputs& in) {
        return pad(in[0], {-1, 2, 1, -2}, PadMode::Constant, 0.5);
      },
      0));
  OpCase crop_all = f64_row(
      "pad_cropping_everything", x_3x4,
      [](const Inputs& in) {
        return pad(in[0], {-3, -1}, PadMode::Constant, 0.5);
      },
      0);
  crop_all.grad = false;
  r.push_back(crop_all);
  r.push_back(f64_row(
      "roll", x_3x4,
      [](const Inputs& in) {
        return roll(in[0], {1, -3}, {0, 1});
      },
      0));
  r.push_back(f64_row(
      "roll_flattened", x_3x4, [](const Inputs& in) { return roll(in[0], {5}, {}); }, 0));
  r.push_back(f64_row(
      "flip_both", x_3x4,
      [](const Inputs& in) {
        return flip(in[0], {0, 1});
      },
      0));
  r.push_back(f64_row(
      "flip_of_transpose", x_3x4, [](const Inputs& in) { return flip(in[0].t(), {1}); }, 0));
  r.push_back(f64_row(
      "flip_nothing", x_3x4, [](const Inputs& in) { return flip(in[0], {}); }, 0));
  OpCase flip_complex = f64_row(
      "flip_values", [](DType dt) { return Inputs{x_3x4(DType::F64)[0].to(dt)}; },
      [](const Inputs& in) { return flip(in[0], {1}); }, 0);
  flip_complex.dtypes = {DType::C64};
  flip_complex.grad = false;
  r.push_back(flip_complex);
  return r;
}

FK_PARITY_TABLE(Join, rows());

}  // namespace
}  // namespace fk::cuda_parity
