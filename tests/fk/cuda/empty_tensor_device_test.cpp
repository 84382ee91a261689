// fk's ops on tensors with a zero-size dimension, on the GPU, against the
// same ops on the CPU: the same error, or the same shape, dtype and values
// (reductions over nothing give their identities: 0, 1, NaN, -inf) and the
// same gradients. Each op family's launcher sizes a grid from the element
// count; at 0 that grid has no blocks, which CUDA refuses as an invalid
// configuration, so every device path must return before launching or ask
// for at least one block.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fk/fk.h"
#include "parity.h"

namespace fk {
namespace {

using cuda_parity::kGpu;

// An input: random values of a shape and dtype (i64 inputs are empty indices).
struct Input {
  Input(Dims s, DType t = DType::F32) : shape(std::move(s)), dtype(t) {}
  Dims shape;
  DType dtype;
};

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// A tensor's dtype, shape and values as f64 bit patterns (complex as its
// real then imaginary parts), so that NaN equals NaN and -0 differs from 0.
// Every NaN is kept as one pattern: the devices make different ones for 0/0
// (x86 a negative quiet NaN, CUDA 0x7fffffff), and a payload means nothing.
struct Seen {
  DType dtype = DType::F32;
  Dims shape;
  std::vector<uint64_t> bits;
  bool operator==(const Seen&) const = default;
};
Seen seen(const Tensor& t) {
  Seen s{t.dtype(), t.shape(), {}};
  Tensor host = t.detach().to(kCPU);
  std::vector<double> v;
  if (is_complex(host.dtype())) {
    v = real(host).to(DType::F64).contiguous().to_vector<double>();
    const std::vector<double> im = imag(host).to(DType::F64).contiguous().to_vector<double>();
    v.insert(v.end(), im.begin(), im.end());
  } else {
    v = host.to(DType::F64).contiguous().to_vector<double>();
  }
  for (double d : v) {
    if (std::isnan(d)) d = std::numeric_limits<double>::quiet_NaN();
    uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    s.bits.push_back(b);
  }
  return s;
}

struct Outcome {
  std::optional<std::string> error;
  Seen out;
  bool on_device = false;
  std::vector<std::optional<Seen>> grads;
};

Outcome run(const Op& op, const std::vector<Input>& inputs, Device device) {
  std::vector<Tensor> in;
  uint64_t seed = 7;
  for (const Input& i : inputs) {
    if (i.dtype == DType::I64) {
      in.push_back(from_vector(std::vector<int64_t>{}, i.shape).to(device));
      continue;
    }
    Generator g(seed++);
    const bool cx = is_complex(i.dtype);  // complex inputs: real values, converted
    Tensor t = uniform(i.shape, -1, 1, {cx ? DType::F32 : i.dtype}, &g).to(i.dtype).to(device);
    if (is_floating(i.dtype) || is_complex(i.dtype)) t.set_requires_grad(true);
    in.push_back(t);
  }
  Outcome o;
  try {
    const Tensor y = op(in);
    o.out = seen(y);
    o.on_device = y.device() == device;
    if (y.requires_grad()) sum(is_complex(y.dtype()) ? abs(y) : y).backward();
  } catch (const Error& e) {
    o.error = e.what();
    return o;
  }
  for (const Tensor& t : in)
    o.grads.push_back(t.requires_grad() && t.grad().defined() ? std::optional<Seen>(seen(t.grad()))
                                                              : std::nullopt);
  return o;
}

struct Case {
  std::string name;
  std::vector<Input> inputs;
  Op op;
};

void expect_device_matches_cpu(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome cpu = run(c.op, c.inputs, kCPU), gpu = run(c.op, c.inputs, kGpu);
    if (cpu.error) {
      ASSERT_TRUE(gpu.error.has_value()) << "the CPU refuses: " << *cpu.error;
      EXPECT_EQ(*gpu.error, *cpu.error);
      continue;
    }
    ASSERT_FALSE(gpu.error.has_value()) << *gpu.error;
    EXPECT_TRUE(gpu.on_device);
    EXPECT_EQ(gpu.out.dtype, cpu.out.dtype);
    EXPECT_EQ(gpu.out.shape, cpu.out.shape);
    EXPECT_EQ(gpu.out.bits, cpu.out.bits);
    EXPECT_EQ(gpu.grads, cpu.grads);
  }
}

const Input kRows0{{0, 3}}, kCols0{{3, 0}}, kMid0{{2, 0, 4}}, kFlat0{{0}};

TEST(CudaEmptyTensors, ElementwiseOps) {
  FK_SKIP_WITHOUT_GPU();
  expect_device_matches_cpu({
      {"exp", {kRows0}, [](const auto& in) { return exp(in[0]); }},
      {"relu f64", {{{2, 0, 4}, DType::F64}}, [](const auto& in) { return relu(in[0]); }},
      {"clamp", {kCols0}, [](const auto& in) { return clamp(in[0], -0.5, 0.5); }},
      {"abs c64", {{{0, 3}, DType::C64}}, [](const auto& in) { return abs(in[0]); }},
      {"add, broadcast row", {kRows0, {{3}}}, [](const auto& in) { return add(in[0], in[1]); }},
      {"mul, broadcast to empty",
       {{{0, 1}}, {{1, 3}}},
       [](const auto& in) { return mul(in[0], in[1]); }},
      {"pow", {kMid0, kMid0}, [](const auto& in) { return pow(in[0], in[1]); }},
      {"lt", {kRows0, kRows0}, [](const auto& in) { return lt(in[0], in[1]); }},
      {"where",
       {kRows0, kRows0, kRows0},
       [](const auto& in) { return where(gt(in[0], in[1]), in[1], in[2]); }},
      {"addcmul",
       {kCols0, kCols0, kCols0},
       [](const auto& in) { return addcmul(in[0], in[1], in[2], 0.5); }},
      {"to f16", {kRows0}, [](const auto& in) { return in[0].to(DType::F16); }},
      {"contiguous of a transpose",
       {kMid0},
       [](const auto& in) { return contiguous(transpose(in[0], 0, 2)); }},
      {"clone", {kFlat0}, [](const auto& in) { return clone(in[0]); }},
  });
}

TEST(CudaEmptyTensors, ReductionsOverNothingGiveTheirIdentities) {
  FK_SKIP_WITHOUT_GPU();
  expect_device_matches_cpu({
      {"sum over the empty dim", {kRows0}, [](const auto& in) { return sum(in[0], {0}); }},
      {"sum of all", {kMid0}, [](const auto& in) { return sum(in[0]); }},
      {"sum over a full dim", {kRows0}, [](const auto& in) { return sum(in[0], {1}); }},
      {"sum f16", {{{3, 0}, DType::F16}}, [](const auto& in) { return sum(in[0], {1}); }},
      {"mean", {kCols0}, [](const auto& in) { return mean(in[0], {1}); }},
      {"prod", {kRows0}, [](const auto& in) { return prod(in[0], {0}); }},
      {"var", {kCols0}, [](const auto& in) { return var(in[0], {1}); }},
      {"std", {kRows0}, [](const auto& in) { return std(in[0], {1}); }},
      {"norm", {kCols0}, [](const auto& in) { return norm(in[0], 2.0, {1}); }},
      {"logsumexp", {kCols0}, [](const auto& in) { return logsumexp(in[0], {1}); }},
      {"amax over the empty dim", {kCols0}, [](const auto& in) { return amax(in[0], {1}); }},
      {"amax over a full dim", {kRows0}, [](const auto& in) { return amax(in[0], {1}); }},
      {"max over the empty dim", {kCols0}, [](const auto& in) { return max(in[0], 1).first; }},
      {"argmax over a full dim", {kRows0}, [](const auto& in) { return argmax(in[0], 1); }},
      {"softmax over the empty dim", {kCols0}, [](const auto& in) { return softmax(in[0], 1); }},
      {"log_softmax of no rows", {kRows0}, [](const auto& in) { return log_softmax(in[0], 1); }},
  });
}

TEST(CudaEmptyTensors, MatrixProductsWithAZeroDimension) {
  FK_SKIP_WITHOUT_GPU();
  expect_device_matches_cpu({
      {"m x 0 by 0 x n", {{{2, 0}}, {{0, 3}}}, [](const auto& in) { return matmul(in[0], in[1]); }},
      {"0 x k by k x n", {{{0, 4}}, {{4, 3}}}, [](const auto& in) { return matmul(in[0], in[1]); }},
      {"m x k by k x 0", {{{2, 4}}, {{4, 0}}}, [](const auto& in) { return matmul(in[0], in[1]); }},
      {"f64 m x 0 by 0 x n",
       {{{2, 0}, DType::F64}, {{0, 3}, DType::F64}},
       [](const auto& in) { return matmul(in[0], in[1]); }},
      {"f16 m x 0 by 0 x n",
       {{{2, 0}, DType::F16}, {{0, 3}, DType::F16}},
       [](const auto& in) { return matmul(in[0], in[1]); }},
      {"c64 m x 0 by 0 x n",
       {{{2, 0}, DType::C64}, {{0, 3}, DType::C64}},
       [](const auto& in) { return matmul(in[0], in[1]); }},
      {"bmm, no batches",
       {{{0, 2, 4}}, {{0, 4, 3}}},
       [](const auto& in) { return bmm(in[0], in[1]); }},
      {"bmm, k = 0", {{{2, 2, 0}}, {{2, 0, 3}}}, [](const auto& in) { return bmm(in[0], in[1]); }},
      {"linear, no rows",
       {{{0, 4}}, {{3, 4}}, {{3}}},
       [](const auto& in) { return linear(in[0], in[1], in[2]); }},
      {"linear, no input features",
       {{{5, 0}}, {{3, 0}}, {{3}}},
       [](const auto& in) { return linear(in[0], in[1], in[2]); }},
  });
}

TEST(CudaEmptyTensors, TransformsOfNoRows) {
  FK_SKIP_WITHOUT_GPU();
  expect_device_matches_cpu({
      {"rfft of no rows", {{{0, 8}}}, [](const auto& in) { return rfft(in[0]); }},
      {"fft c64 of no rows", {{{0, 8}, DType::C64}}, [](const auto& in) { return fft(in[0]); }},
      {"irfft of no rows", {{{0, 5}, DType::C64}}, [](const auto& in) { return irfft(in[0]); }},
      {"fft of length 0", {{{3, 0}, DType::C64}}, [](const auto& in) { return fft(in[0]); }},
  });
}

TEST(CudaEmptyTensors, JoinsAndIndexing) {
  FK_SKIP_WITHOUT_GPU();
  const Input none{{0}, DType::I64};
  expect_device_matches_cpu({
      {"cat of empties",
       {kRows0, kRows0},
       [](const auto& in) {
         return cat({in[0], in[1]});
       }},
      {"cat of an empty and a row",
       {kRows0, {{1, 3}}},
       [](const auto& in) {
         return cat({in[0], in[1]});
       }},
      {"stack",
       {kCols0, kCols0},
       [](const auto& in) {
         return stack({in[0], in[1]}, 1);
       }},
      {"pad of no rows",
       {kRows0},
       [](const auto& in) {
         return pad(in[0], {1, 1});
       }},
      {"pad of no columns",
       {kCols0},
       [](const auto& in) {
         return pad(in[0], {2, 1});
       }},
      {"roll", {kRows0}, [](const auto& in) { return roll(in[0], {1}, {1}); }},
      {"flip",
       {kMid0},
       [](const auto& in) {
         return flip(in[0], {0, 2});
       }},
      {"index_select of nothing",
       {{{4, 3}}, none},
       [](const auto& in) { return index_select(in[0], 0, in[1]); }},
      {"gather of nothing",
       {{{4, 3}}, {{0, 3}, DType::I64}},
       [](const auto& in) { return gather(in[0], 0, in[1]); }},
      {"index_add of nothing",
       {{{4, 3}}, none, {{0, 3}}},
       [](const auto& in) { return index_add(in[0], 0, in[1], in[2]); }},
      {"scatter_add of nothing",
       {{{4, 3}}, {{0, 3}, DType::I64}, {{0, 3}}},
       [](const auto& in) { return scatter_add(in[0], 0, in[1], in[2]); }},
      {"masked_fill",
       {kRows0, kRows0},
       [](const auto& in) { return masked_fill(in[0], gt(in[1], scalar_like(in[1], 0.0)), 2.0); }},
      {"masked_select",
       {kCols0, kCols0},
       [](const auto& in) { return masked_select(in[0], gt(in[1], scalar_like(in[1], 0.0))); }},
  });
}

}  // namespace
}  // namespace fk
