// The fk reduction ops on CUDA tensors against the same ops on the CPU (see
// parity.h), values and gradients: prod (with zeros), norm, var, std,
// logsumexp, sum, mean, amax, amin, max, argmin, softmax, log_softmax; complex,
// integer and bool inputs, infinities and empty rows. The launchers below them are
// in reduce_parity_test.cpp.
#include "parity.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "fk/test_util.h"

namespace fk::cuda_parity {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor x_4x5() {
  return test::random_tensor({4, 5}, DType::F64, -1.5, 1.5, 61);
}
// x with one zero in row 1 and two in row 2: prod's gradient must stay exact there.
Tensor with_zeros() {
  std::vector<double> v = x_4x5().to_vector<double>();
  v[7] = 0;
  v[10] = 0;
  v[13] = 0;
  return from_vector(v, {4, 5});
}

// An fk op on x (or its zeros variant) in f64 and f32, with gradients.
OpCase real_row(std::string name, bool zeros, Fn f) {
  return {
      .name = std::move(name),
      .dtypes = {DType::F64, DType::F32},
      .inputs = [zeros](DType dt) { return Inputs{(zeros ? with_zeros() : x_4x5()).to(dt)}; },
      .device = std::move(f),
      .tol = [](DType dt) { return near(dt == DType::F64 ? 1e-11 : 2e-5); },
      .grad = true,
  };
}

// An fk op on a complex [3, 4] input, with gradients.
OpCase complex_row(std::string name, Fn f) {
  return {
      .name = std::move(name),
      .dtypes = {DType::C128},
      .inputs =
          [](DType dt) {
            return Inputs{test::random_complex({3, 4}, 62).to(dt)};
          },
      .device = std::move(f),
      .tol = [](DType) { return near(1e-11); },
      .grad = true,
  };
}

// Values only, from a fixed input, within tol relative to 1 + |want|.
OpCase values_row(std::string name, Tensor x, Fn f, double tol) {
  return {
      .name = std::move(name),
      .dtypes = {x.dtype()},
      .inputs = [x](DType) { return Inputs{x}; },
      .device = std::move(f),
      .tol = [tol](DType) { return near(tol); },
  };
}

// An fk op on a [5, 9] f32 input in [-2, 2].
OpCase f32_row(std::string name, Fn f, double tol) {
  return values_row(std::move(name), test::random_tensor({5, 9}, DType::F32, -2, 2, 5),
                    std::move(f), tol);
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  r.push_back(real_row("prod_dim1", true, [](const Inputs& in) { return prod(in[0], {1}); }));
  r.push_back(
      real_row("prod_dim0_keepdim", true, [](const Inputs& in) { return prod(in[0], {0}, true); }));
  r.push_back(real_row("prod_all", false, [](const Inputs& in) { return prod(in[0]); }));
  const std::pair<const char*, double> ps[] = {{"1", 1.0}, {"2", 2.0}, {"3", 3.0}, {"inf", kInf}};
  for (auto [tag, p] : ps) {
    r.push_back(real_row(std::string("norm_dim1_p") + tag, true,
                         [p](const Inputs& in) { return norm(in[0], p, {1}); }));
    r.push_back(real_row(std::string("norm_all_p") + tag, false,
                         [p](const Inputs& in) { return norm(in[0].t(), p, {}, true); }));
  }
  r.push_back(real_row("var_dim1", false, [](const Inputs& in) { return var(in[0], {1}); }));
  r.push_back(
      real_row("var_dim0", false, [](const Inputs& in) { return var(in[0], {0}, 0, true); }));
  r.push_back(real_row("std_all", false, [](const Inputs& in) { return fk::std(in[0], {}, 1); }));
  r.push_back(
      real_row("logsumexp_dim1", false, [](const Inputs& in) { return logsumexp(in[0], {1}); }));
  r.push_back(real_row("logsumexp_all", false, [](const Inputs& in) {
    return logsumexp(in[0].t(), {0, 1}, true);
  }));
  // A zero row: norm 0, gradient 0.
  OpCase zero_norm =
      real_row("norm_of_zeros", false, [](const Inputs& in) { return norm(in[0], 2.0, {1}); });
  zero_norm.dtypes = {DType::F64};
  zero_norm.inputs = [](DType dt) { return Inputs{zeros({2, 3}, {dt})}; };
  zero_norm.tol = [](DType) { return near(0); };
  r.push_back(zero_norm);
  r.push_back(complex_row("prod_complex", [](const Inputs& in) { return prod(in[0], {1}); }));
  r.push_back(complex_row("norm_complex", [](const Inputs& in) { return norm(in[0], 2.0, {0}); }));
  r.push_back(
      complex_row("norm_p1_complex", [](const Inputs& in) { return norm(in[0], 1.0, {1}); }));
  r.push_back(complex_row("var_complex", [](const Inputs& in) { return var(in[0], {1}); }));
  r.push_back(values_row(
      "prod_integers", mul(x_4x5(), 3.0).to(DType::I32),
      [](const Inputs& in) { return prod(in[0], {1}); }, 0));
  std::vector<double> w = with_zeros().to_vector<double>();
  for (int j = 0; j < 5; ++j) w[j] = -kInf;
  r.push_back(values_row(
      "logsumexp_with_infs", from_vector(w, {4, 5}),
      [](const Inputs& in) { return logsumexp(in[0], {1}); }, 1e-12));
  r.push_back(values_row(
      "prod_of_empty_rows", zeros({2, 0}, {DType::F64}),
      [](const Inputs& in) { return prod(in[0], {1}); }, 0));
  // Through the dispatch on f32.
  Tensor a46 = test::random_tensor({4, 6}, DType::F32, 0.5, 2, 1);
  r.push_back(values_row(
      "sum_dim0", a46, [](const Inputs& in) { return sum(in[0], {0}); }, 1e-5));
  r.push_back(values_row(
      "sum_all", a46, [](const Inputs& in) { return sum(in[0]); }, 1e-5));
  r.push_back(f32_row(
      "mean_dim1", [](const Inputs& in) { return mean(in[0], {1}); }, 1e-6));
  r.push_back(f32_row(
      "amax_dim0", [](const Inputs& in) { return amax(in[0], {0}, true); }, 0));
  r.push_back(f32_row(
      "amin_all", [](const Inputs& in) { return amin(in[0]); }, 0));
  r.push_back(f32_row(
      "max_values", [](const Inputs& in) { return max(in[0], 1).first; }, 0));
  r.push_back(f32_row(
      "max_indices", [](const Inputs& in) { return max(in[0], 1).second; }, 0));
  r.push_back(f32_row(
      "argmin_dim0", [](const Inputs& in) { return argmin(in[0], 0); }, 0));
  // Bool inputs (false < true): row 0 all false, row 1 all true (ties: the
  // first index), the others mixed; the device refused bool until session 16.
  std::vector<double> bits = test::random_values(5 * 9, 0, 1, 7);
  for (int j = 0; j < 9; ++j) bits[j] = 0, bits[9 + j] = 1;
  const Tensor mask = gt(from_vector(bits, {5, 9}), scalar_tensor(0.6, {DType::F64}));
  r.push_back(values_row(
      "argmax_of_bool_dim1", mask, [](const Inputs& in) { return argmax(in[0], 1); }, 0));
  r.push_back(values_row(
      "argmin_of_bool_dim0", mask, [](const Inputs& in) { return argmin(in[0], 0); }, 0));
  r.push_back(values_row(
      "max_indices_of_bool", mask, [](const Inputs& in) { return max(in[0], 1).second; }, 0));
  r.push_back(values_row(
      "min_values_of_bool", mask, [](const Inputs& in) { return min(in[0], 1).first; }, 0));
  r.push_back(f32_row(
      "softmax_dim0", [](const Inputs& in) { return softmax(in[0], 0); }, 1e-6));
  r.push_back(f32_row(
      "log_softmax_dim1", [](const Inputs& in) { return log_softmax(in[0], 1); }, 1e-6));
  // The gradients of max along a dim and of softmax match the CPU's.
  OpCase graph = f32_row(
      "max_plus_softmax_graph",
      [](const Inputs& in) {
        return add(sum(max(in[0], 1).first), sum(mul(softmax(in[0], 0), in[0])));
      },
      1e-5);
  graph.grad = true;
  r.push_back(graph);
  // Device gradchecks (f64): autograd's device gradients against central
  // differences of the same device ops.
  auto gradcheck_row = [](std::string name, Fn f) {
    return OpCase{
        .name = std::move(name),
        .dtypes = {DType::F64},
        .inputs =
            [](DType dt) {
              return Inputs{test::random_tensor({3, 4}, dt, -1, 1, 31)};
            },
        .device = std::move(f),
        .grad = true,
        .gradcheck = true,
    };
  };
  r.push_back(gradcheck_row("softmax_dim1", [](const Inputs& in) { return softmax(in[0], 1); }));
  r.push_back(gradcheck_row("sum_of_squares_dim1",
                            [](const Inputs& in) { return sum(mul(in[0], in[0]), {1}); }));
  return r;
}

FK_PARITY_TABLE(ReduceOps, rows());

}  // namespace
}  // namespace fk::cuda_parity
