// The fk index and mask ops on CUDA tensors against the same ops on the CPU
// (see parity.h), values and gradients: index_select, gather, scatter_add,
// index_add (out of place and in place), masked_fill, masked_select; and the
// errors a bad index or an operand on another device gives. The launchers
// below them are in index_parity_test.cpp.
#include "parity.h"

#include <string>
#include <utility>
#include <vector>

#include "fk/test_util.h"

namespace fk::cuda_parity {
namespace {

Tensor x_5x6() {
  return test::random_tensor({5, 6}, DType::F64, -1, 1, 21);
}
Tensor src_2x6() {
  return test::random_tensor({2, 6}, DType::F64, -1, 1, 22);
}
Tensor src_4x6() {
  return test::random_tensor({4, 6}, DType::F64, -1, 1, 23);
}
Tensor repeats() {  // index_select / index_add index with a repeat: the backward accumulates
  return i64s({4, 0, 4, 2}, {4});
}
Tensor gather_dim0() {
  return i64s({0, 2, 1, 4, 4, 3, 0, 1, 2, 3, 3, 3}, {2, 6});
}
Tensor gather_dim1() {
  return i64s({5, 0, 5, 1, 1, 2, 3, 3, 0, 4, 4, 4, 2, 5, 0}, {5, 3});
}

Tensor mask_4x5() {
  std::vector<bool> mv;
  for (int i = 0; i < 20; ++i) mv.push_back(i % 3 == 0 || i == 7);
  return from_vector(mv, {4, 5});
}
Tensor mask_row() {
  return from_vector(std::vector<bool>{true, false, false, true, true}, {5});
}

// An fk op in f64 and f32 with gradients of its inexact inputs.
OpCase real_row(std::string name, std::function<Inputs(DType)> inputs, Fn f, double f32_tol) {
  return {
      .name = std::move(name),
      .dtypes = {DType::F64, DType::F32},
      .inputs = std::move(inputs),
      .device = std::move(f),
      .tol = [f32_tol](DType dt) { return near(dt == DType::F64 ? 1e-12 : f32_tol); },
      .grad = true,
  };
}

// Values only, from fixed inputs.
OpCase values_row(std::string name, Inputs inputs, Fn f, double tol) {
  const DType dt = inputs[0].dtype();
  return {
      .name = std::move(name),
      .dtypes = {dt},
      .inputs = [inputs](DType) { return inputs; },
      .device = std::move(f),
      .tol = [tol](DType) { return near(tol); },
  };
}

Inputs x_only(DType dt) {
  return {x_5x6().to(dt)};
}
Inputs mask_x(DType dt) {
  return {test::random_tensor({4, 5}, DType::F64, -1, 1, 31).to(dt)};
}

void add_index_rows(std::vector<OpCase>& r) {
  r.push_back(real_row(
      "index_select_dim0", x_only,
      [](const Inputs& in) { return index_select(in[0], 0, like(repeats(), in[0])); }, 1e-5));
  r.push_back(real_row(
      "index_select_of_transpose_i32_index", x_only,
      [](const Inputs& in) {
        return index_select(in[0].t(), 1, like(repeats().to(DType::I32), in[0]));
      },
      1e-5));
  r.push_back(real_row(
      "gather_dim0", x_only,
      [](const Inputs& in) { return gather(in[0], 0, like(gather_dim0(), in[0])); }, 1e-5));
  r.push_back(real_row(
      "gather_dim1", x_only,
      [](const Inputs& in) { return gather(in[0], 1, like(gather_dim1(), in[0])); }, 1e-5));
  r.push_back(real_row(
      "scatter_add",
      [](DType dt) {
        return Inputs{x_5x6().to(dt), src_2x6().to(dt)};
      },
      [](const Inputs& in) { return scatter_add(in[0], 0, like(gather_dim0(), in[0]), in[1]); },
      1e-5));
  for (auto [tag, alpha] : {std::pair{"2", 2.0}, std::pair{"minus_half", -0.5}}) {
    r.push_back(real_row(
        std::string("index_add_alpha_") + tag,
        [](DType dt) {
          return Inputs{x_5x6().to(dt), src_4x6().to(dt)};
        },
        [alpha](const Inputs& in) {
          return index_add(in[0], 0, like(repeats(), in[0]), in[1], alpha);
        },
        1e-5));
  }
  r.push_back(values_row(
      "scatter_add_integers",
      {mul(x_5x6(), 10.0).to(DType::I64), mul(src_2x6(), 10.0).to(DType::I64)},
      [](const Inputs& in) { return scatter_add(in[0], 0, like(gather_dim0(), in[0]), in[1]); },
      0));
  r.push_back(values_row(
      "scatter_add_in_place", {x_5x6(), src_2x6()},
      [](const Inputs& in) {
        Tensor t = in[0].clone();
        scatter_add_(t, 0, like(gather_dim0(), t), in[1]);
        return t;
      },
      1e-12));
  r.push_back(values_row(
      "scatter_add_then_index_add_in_place", {x_5x6(), src_2x6(), src_4x6()},
      [](const Inputs& in) {
        Tensor t = in[0].clone();
        scatter_add_(t, 0, like(gather_dim0(), t), in[1]);
        index_add_(t, 0, like(repeats(), t), in[2], 3.0);
        return t;
      },
      1e-12));
  // A half tensor accumulates in f32, as on the CPU.
  r.push_back(values_row(
      "index_add_half", {x_5x6().to(DType::F16), src_4x6().to(DType::F16)},
      [](const Inputs& in) { return index_add(in[0], 0, like(repeats(), in[0]), in[1]); }, 1e-3));
  r.push_back({
      .name = "index_select_gradcheck",
      .dtypes = {DType::F64},
      .inputs =
          [](DType dt) {
            return Inputs{test::random_tensor({3, 4}, dt, -1, 1, 31)};
          },
      .device =
          [](const Inputs& in) {
            return index_select(in[0], 0, like(i64s({2, 0, 2, 1}, {4}), in[0]));
          },
      .grad = true,
      .gradcheck = true,
  });
}

void add_mask_rows(std::vector<OpCase>& r) {
  r.push_back(real_row(
      "masked_fill", mask_x,
      [](const Inputs& in) { return masked_fill(in[0], like(mask_4x5(), in[0]), -3.5); }, 1e-6));
  r.push_back(real_row(
      "masked_fill_of_transpose", mask_x,
      [](const Inputs& in) { return masked_fill(in[0].t(), like(mask_4x5().t(), in[0]), 2.0); },
      1e-6));
  r.push_back(real_row(
      "masked_select", mask_x,
      [](const Inputs& in) { return masked_select(in[0], like(mask_4x5(), in[0])); }, 1e-6));
  r.push_back(real_row(
      "masked_select_broadcast_mask", mask_x,
      [](const Inputs& in) { return masked_select(in[0], like(mask_row(), in[0])); }, 1e-6));
  r.push_back(real_row(
      "masked_select_broadcast_input",
      [](DType dt) { return Inputs{mask_x(dt)[0].narrow(0, 0, 1)}; },
      [](const Inputs& in) { return masked_select(in[0], like(mask_4x5(), in[0])); }, 1e-6));
  const Tensor x = mask_x(DType::F64)[0];
  r.push_back(values_row(
      "masked_select_nothing", {x},
      [](const Inputs& in) {
        return masked_select(in[0], zeros({4, 5}, {DType::Bool, in[0].device()}));
      },
      0));
  // In place, contiguous, then strided.
  r.push_back(values_row(
      "masked_fill_in_place", {x},
      [](const Inputs& in) {
        Tensor t = in[0].clone();
        masked_fill_(t, like(mask_4x5(), t), 7.0);
        return t;
      },
      0));
  r.push_back(values_row(
      "masked_fill_in_place_then_of_transpose", {x},
      [](const Inputs& in) {
        Tensor t = in[0].clone();
        masked_fill_(t, like(mask_4x5(), t), 7.0);
        Tensor tt = t.t();
        masked_fill_(tt, like(mask_row().narrow(0, 0, 4), t), -1.0);
        return t;
      },
      0));
  r.push_back(values_row(
      "masked_fill_integers", {x.to(DType::I32)},
      [](const Inputs& in) { return masked_fill(in[0], like(mask_4x5(), in[0]), 4.0); }, 0));
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  add_index_rows(r);
  add_mask_rows(r);
  return r;
}

FK_PARITY_TABLE(IndexOps, rows());

TEST(CudaIndexOps, ErrorsNameTheBadIndexOrDevice) {
  FK_SKIP_WITHOUT_GPU();
  Tensor g = test::random_tensor({4, 3}, DType::F32).to(kGpu);
  EXPECT_THROW(index_select(g, 0, i64s({0, 4}, {2}).to(kGpu)), Error);
  EXPECT_THROW(index_select(g, 0, i64s({-1}, {1}).to(kGpu)), Error);
  EXPECT_THROW(gather(g, 1, i64s({0, 3, 0, 0}, {4, 1}).to(kGpu)), Error);
  EXPECT_THROW(index_add(g, 0, i64s({7}, {1}).to(kGpu), ones({1, 3}, {DType::F32, kGpu})), Error);
  // The message names the offending index.
  try {
    scatter_add(g, 0, i64s({0, 9, 0}, {1, 3}).to(kGpu), ones({1, 3}, {DType::F32, kGpu}));
    ADD_FAILURE() << "no error for index 9";
  } catch (const Error& e) {
    EXPECT_NE(e.given().find("9"), std::string::npos) << e.what();
  }
  // Operands on another device.
  EXPECT_THROW(index_select(g, 0, i64s({0}, {1})), Error);
  EXPECT_THROW(masked_fill(g, from_vector(std::vector<bool>{true, false, true}, {3}), 1.0), Error);
  EXPECT_THROW(cat({g, ones({4, 3})}, 0), Error);
}

}  // namespace
}  // namespace fk::cuda_parity
