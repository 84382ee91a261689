// BatchNorm, InstanceNorm, the pointwise nonlinearities, the binary ops of
// two maps, prune and to_dense with features on the GPU, against the same modules and ops on CPU
// operands: outputs, running statistics and the gradients of features, weight and bias to 1e-6
// (f32). The nonlinearities are fk's unary ops and softmax, device-capable in fk; the
// normalization's two passes over the rows run on the device. Also the mixed-device errors.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/nn/norm.h"
#include "minkowski/ops/activation.h"
#include "minkowski/ops/dense.h"
#include "minkowski/ops/elementwise.h"
#include "minkowski/ops/normalization.h"
#include "minkowski/ops/prune.h"

namespace minkowski {
namespace {

using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::random_rows;
using cuda_test::random_values;
using fk::test::error_of;

constexpr double kTol = 1e-6;

// Features with a mean of 3 (the normalization's centring matters).
SparseTensor cpu_input(int64_t n, int64_t c, int batches, uint64_t seed) {
  const std::vector<int32_t> rows = random_rows(3, n, 10, 1, batches, static_cast<unsigned>(seed));
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  return SparseTensor(fk::add(random_values({coords.size(0), c}, 2.0, seed + 1), 3.0), coords);
}

SparseTensor on(const SparseTensor& x, fk::Device device) {
  fk::Tensor f = x.F().detach().clone().to(device);
  f.set_requires_grad(true);
  return SparseTensor(f, x.key(), x.manager());
}

// The module's affine parameters as fresh leaves on `device`, from `seed`.
// In the module's own parameter dtype (f16 and bf16 modules keep theirs).
template <typename Norm>
void set_parameters(Norm& norm, fk::Device device, uint64_t seed) {
  const int64_t c = norm.channels();
  const fk::DType dt = norm.weight.defined() ? norm.weight.dtype() : fk::DType::F32;
  norm.weight =
      fk::add(random_values({c}, 0.5, seed), 1.0).to(dt).to(device).set_requires_grad(true);
  norm.bias = random_values({c}, 0.5, seed + 1).to(dt).to(device).set_requires_grad(true);
}

// norm on CPU and GPU operands (parameters from one seed): output and the
// gradients of features, weight and bias.
template <typename Norm, typename Forward>
void expect_norm_matches(const SparseTensor& x, Norm& nc, Norm& ng, const Forward& forward,
                         const std::string& what, double tol = kTol) {
  set_parameters(nc, fk::kCPU, 21);
  set_parameters(ng, kGpu, 21);
  const SparseTensor xc = on(x, fk::kCPU), xg = on(x, kGpu);
  const SparseTensor yc = forward(nc, xc), yg = forward(ng, xg);
  ASSERT_EQ(yg.F().device(), kGpu) << what;
  expect_close(yg.F(), yc.F(), tol, what + " forward");
  const fk::Tensor g = random_values(yc.F().shape(), 1.0, 23);
  yc.F().backward(g);
  yg.F().backward(g.to(kGpu));
  expect_close(xg.F().grad(), xc.F().grad(), tol, what + " grad features");
  ASSERT_EQ(ng.weight.grad().device(), kGpu) << what;
  expect_close(ng.weight.grad(), nc.weight.grad(), tol, what + " grad weight");
  expect_close(ng.bias.grad(), nc.bias.grad(), tol, what + " grad bias");
}

TEST(MinkowskiCudaFeatureOpsDispatch, BatchNormMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  // 3000 rows: several of the statistics' 1024-row blocks.
  const SparseTensor x = cpu_input(3000, 8, 2, 3);
  BatchNorm bc(8), bg(8);
  auto forward = [](BatchNorm& bn, const SparseTensor& s) { return bn.forward(s); };
  expect_norm_matches(x, bc, bg, forward, "batch norm, training");
  expect_close(bg.running_mean, bc.running_mean, kTol, "running mean");
  expect_close(bg.running_var, bc.running_var, kTol, "running var");
  bc.eval();
  bg.eval();
  expect_norm_matches(x, bc, bg, forward, "batch norm, eval");
}

// The device forms the statistics, coefficients and parameter gradients as
// the CPU does (same sums in the same order, products rounded on their own):
// every value is the CPU's bit for bit, with the running statistics on the
// CPU (uploaded as statistics in eval) and, through the module, on the device.
TEST(MinkowskiCudaFeatureOpsDispatch, NormalizationIsTheCpusBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(2600, 7, 3, 41);
  auto forward = [](auto& norm, const SparseTensor& s) { return norm.forward(s); };
  BatchNorm bc(7), bg(7);
  expect_norm_matches(x, bc, bg, forward, "batch norm, training", 0.0);
  expect_close(bg.running_var, bc.running_var, 0.0, "running var");
  bc.eval();
  bg.eval();
  expect_norm_matches(x, bc, bg, forward, "batch norm, eval (running statistics on the CPU)", 0.0);
  InstanceNorm ic(7), ig(7);
  expect_norm_matches(x, ic, ig, forward, "instance norm", 0.0);

  nn::BatchNorm mc(7), mg(7);
  mg.to(kGpu);
  for (const bool training : {true, false}) {
    mc.train(training);
    mg.train(training);
    const SparseTensor xc = on(x, fk::kCPU), xg = on(x, kGpu);
    const SparseTensor yc = mc.forward(xc), yg = mg.forward(xg);
    expect_close(yg.F(), yc.F(), 0.0, training ? "module, training" : "module, eval");
    const fk::Tensor g = random_values(yc.F().shape(), 1.0, 43);
    yc.F().backward(g);
    yg.F().backward(g.to(kGpu));
    expect_close(xg.F().grad(), xc.F().grad(), 0.0, "module grad features");
  }
  ASSERT_EQ(mg.running_mean().device(), kGpu);
  expect_close(mg.running_mean(), mc.running_mean(), 0.0, "module running mean");
  expect_close(mg.running_var(), mc.running_var(), 0.0, "module running var");
}

// f16 and bf16 features (and parameters) normalize in f32 on both sides, the
// statistics from the same sums in the same order, each value rounded to the
// feature dtype once: the device's outputs, gradients and running statistics
// are the CPU's bit for bit, in training and in eval.
TEST(MinkowskiCudaFeatureOpsDispatch, HalfFeaturesNormalizeAsTheCpuBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x32 = cpu_input(2600, 7, 3, 51);
  auto forward = [](auto& norm, const SparseTensor& s) { return norm.forward(s); };
  for (const fk::DType dt : {fk::DType::F16, fk::DType::BF16}) {
    const std::string name = fk::name(dt);
    const SparseTensor x(x32.F().to(dt), x32.key(), x32.manager());
    BatchNorm bc(7, 1e-5, 0.1, true, true, dt), bg(7, 1e-5, 0.1, true, true, dt);
    expect_norm_matches(x, bc, bg, forward, name + " batch norm, training", 0.0);
    ASSERT_EQ(bg.running_mean.dtype(), bc.running_mean.dtype()) << name;
    expect_close(bg.running_mean, bc.running_mean, 0.0, name + " running mean");
    expect_close(bg.running_var, bc.running_var, 0.0, name + " running var");
    bc.eval();
    bg.eval();
    expect_norm_matches(x, bc, bg, forward, name + " batch norm, eval", 0.0);
    InstanceNorm ic(7, 1e-5, true, dt), ig(7, 1e-5, true, dt);
    expect_norm_matches(x, ic, ig, forward, name + " instance norm", 0.0);
    const SparseTensor y = ig.forward(on(x, kGpu));
    EXPECT_EQ(y.F().dtype(), dt);
    EXPECT_EQ(y.F().device(), kGpu);
  }
}

// A BatchNorm module on the device reads nothing back to the host: under
// ME_LAZY_SYNC=1 a training forward and backward wait for the device not
// once (the statistics, coefficients, running statistics and the batch
// count stay there).
TEST(MinkowskiCudaFeatureOpsDispatch, BatchNormReadsNothingBackOnTheDevice) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(3000, 8, 2, 45);
  nn::BatchNorm bn(8);
  bn.to(kGpu);
  const fk::Tensor g = random_values({x.size(), 8}, 1.0, 46).to(kGpu);
  const SparseTensor first = on(x, kGpu);
  bn.forward(first).F().backward(g);  // the first call reads the count
  const fk::KnobOverride lazy("ME_LAZY_SYNC", "1");
  const SparseTensor xg = on(x, kGpu);
  const int64_t before = fk::profile::counters().syncs;
  const SparseTensor y = bn.forward(xg);
  y.F().backward(g);
  EXPECT_EQ(fk::profile::counters().syncs - before, 0);
  for (const auto& [name, t] : bn.named_buffers())
    if (name == "num_batches_tracked") {
      EXPECT_EQ(static_cast<int64_t>(t.item()), 2);
    }
}

TEST(MinkowskiCudaFeatureOpsDispatch, InstanceNormMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(3000, 6, 3, 5);
  InstanceNorm ic(6), ig(6);
  expect_norm_matches(
      x, ic, ig, [](InstanceNorm& in, const SparseTensor& s) { return in.forward(s); },
      "instance norm");
  // f64 features through the f64 kernels.
  InstanceNorm dc(6, 1e-5, false, fk::DType::F64), dg(6, 1e-5, false, fk::DType::F64);
  const SparseTensor xd(x.F().to(fk::DType::F64), x.key(), x.manager());
  const SparseTensor yc = dc.forward(xd);
  const SparseTensor yg = dg.forward(SparseTensor(xd.F().to(kGpu), x.key(), x.manager()));
  expect_close(yg.F().to(fk::DType::F32), yc.F().to(fk::DType::F32), 1e-7, "f64 instance norm");
}

// Normalization of a strided view (the transpose of a C x N tensor) on the
// device: the statistics and the affine pass read raw rows, so the dispatch
// makes the view contiguous first; values and gradients equal the CPU's on
// the contiguous copy.
TEST(MinkowskiCudaFeatureOpsDispatch, NormalizationOfAStridedViewMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(2500, 5, 2, 31);
  const Segments seg = batch_segments(x);
  const fk::Tensor w = random_values({5}, 1.0, 32), b = random_values({5}, 1.0, 33);
  const fk::Tensor xc = cuda_test::leaf(x.F(), fk::kCPU);
  const fk::Tensor xt = cuda_test::leaf(x.F().t().contiguous(), kGpu);
  const fk::Tensor view = xt.t();
  ASSERT_FALSE(view.is_contiguous());
  NormStats sc, sg;
  const fk::Tensor yc = normalize(xc, seg, 1e-5, w, b, nullptr, &sc);
  const fk::Tensor yg = normalize(view, seg, 1e-5, w.to(kGpu), b.to(kGpu), nullptr, &sg);
  ASSERT_EQ(yg.device(), kGpu);
  expect_close(yg, yc, kTol, "strided normalize");
  ASSERT_TRUE(sg.moments.defined()) << "the statistics stayed on the device";
  const NormStats hg = sg.host();
  for (size_t k = 0; k < sc.mean.size(); ++k) {
    EXPECT_NEAR(hg.mean[k], sc.mean[k], 1e-12) << k;
    EXPECT_NEAR(hg.var[k], sc.var[k], 1e-12) << k;
  }
  const fk::Tensor g = random_values(yc.shape(), 1.0, 34);
  yc.backward(g);
  yg.backward(g.to(kGpu));
  expect_close(xt.grad().t(), xc.grad(), kTol, "strided normalize grad");
}

TEST(MinkowskiCudaFeatureOpsDispatch, NonlinearitiesMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(1000, 5, 2, 7);
  using Op = std::function<SparseTensor(const SparseTensor&)>;
  const std::vector<std::pair<std::string, Op>> ops = {
      {"relu", [](const SparseTensor& s) { return relu(s); }},
      {"leaky_relu", [](const SparseTensor& s) { return leaky_relu(s, 0.1); }},
      {"elu", [](const SparseTensor& s) { return elu(s); }},
      {"gelu", [](const SparseTensor& s) { return gelu(s); }},
      {"gelu tanh", [](const SparseTensor& s) { return gelu(s, true); }},
      {"silu", [](const SparseTensor& s) { return silu(s); }},
      {"sigmoid", [](const SparseTensor& s) { return sigmoid(s); }},
      {"tanh", [](const SparseTensor& s) { return tanh(s); }},
      {"softmax", [](const SparseTensor& s) { return softmax(s); }},
  };
  // centred features so relu and friends see both signs
  const SparseTensor centred(fk::add(x.F(), -3.0), x.key(), x.manager());
  for (const auto& [name, op] : ops) {
    const SparseTensor xc = on(centred, fk::kCPU), xg = on(centred, kGpu);
    const SparseTensor yc = op(xc), yg = op(xg);
    ASSERT_EQ(yg.F().device(), kGpu) << name;
    expect_close(yg.F(), yc.F(), kTol, name + " forward");
    const fk::Tensor g = random_values(yc.F().shape(), 1.0, 9);
    yc.F().backward(g);
    yg.F().backward(g.to(kGpu));
    expect_close(xg.F().grad(), xc.F().grad(), kTol, name + " grad");
  }
}

TEST(MinkowskiCudaFeatureOpsDispatch, BinaryOpsOnTwoMapsMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor a = cpu_input(600, 4, 2, 13);
  const std::vector<int32_t> rows = random_rows(3, 600, 10, 1, 2, 14);
  const fk::Tensor coords =
      fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / 4, 4});
  const SparseTensor b(random_values({coords.size(0), 4}, 1.0, 15), coords, {1},
                       QuantizationMode::RandomSubsample, a.manager());
  ASSERT_NE(a.key(), b.key());
  for (fk::BinaryOp op : {fk::BinaryOp::Add, fk::BinaryOp::Mul}) {
    const std::string what = fk::name(op);
    const SparseTensor ac = on(a, fk::kCPU), ag = on(a, kGpu);
    const SparseTensor bc = on(b, fk::kCPU), bg = on(b, kGpu);
    const SparseTensor yc = binary(ac, bc, op), yg = binary(ag, bg, op);
    ASSERT_EQ(yg.F().device(), kGpu) << what;
    expect_close(yg.F(), yc.F(), kTol, what + " forward");
    const fk::Tensor g = random_values(yc.F().shape(), 1.0, 16);
    yc.F().backward(g);
    yg.F().backward(g.to(kGpu));
    expect_close(ag.F().grad(), ac.F().grad(), kTol, what + " grad a");
    expect_close(bg.F().grad(), bc.F().grad(), kTol, what + " grad b");
  }
}

TEST(MinkowskiCudaFeatureOpsDispatch, PruneAndToDenseMatchTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(500, 3, 2, 17);
  std::vector<bool> mask(static_cast<size_t>(x.size()));
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = i % 3 != 1;
  using Op = std::function<fk::Tensor(const SparseTensor&)>;
  const std::vector<std::pair<std::string, Op>> ops = {
      {"prune", [&](const SparseTensor& s) { return prune(s, mask).F(); }},
      {"to_dense",
       [](const SparseTensor& s) {
         return to_dense(s, std::vector<int32_t>{-10, -10, -10}).dense;
       }},
  };
  for (const auto& [name, op] : ops) {
    const SparseTensor xc = on(x, fk::kCPU), xg = on(x, kGpu);
    const fk::Tensor yc = op(xc), yg = op(xg);
    ASSERT_EQ(yg.device(), kGpu) << name;
    expect_close(yg, yc, 0, name + " forward");
    const fk::Tensor g = random_values(yc.shape(), 1.0, 18);
    yc.backward(g);
    yg.backward(g.to(kGpu));
    expect_close(xg.F().grad(), xc.F().grad(), 0, name + " grad");
  }
}

// A mask on the device, as a network computes one (a score > 0), keeps the
// same rows as the host mask, for features on either device.
TEST(MinkowskiCudaFeatureOpsDispatch, PruneTakesADeviceMask) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(400, 3, 2, 19);
  std::vector<bool> mask(static_cast<size_t>(x.size()));
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = i % 4 != 2;
  const fk::Tensor host_mask = fk::from_vector(mask, fk::Dims{x.size()});
  const fk::Tensor device_mask = host_mask.to(kGpu);
  const SparseTensor want = prune(x, host_mask);
  for (const fk::Device d : {fk::kCPU, kGpu}) {
    const SparseTensor xd = on(x, d);
    const SparseTensor got = prune(xd, device_mask);
    ASSERT_EQ(got.F().device(), d) << d.str();
    ASSERT_EQ(got.size(), want.size()) << d.str();
    expect_close(got.F(), want.F(), 0, "prune with a device mask, features on " + d.str());
    EXPECT_EQ(got.C().to(fk::kCPU).to_vector<int32_t>(), want.C().to_vector<int32_t>()) << d.str();
  }
}

TEST(MinkowskiCudaFeatureOpsDispatch, MixedDevicesAreClearErrors) {
  MK_SKIP_WITHOUT_GPU();
  const SparseTensor x = cpu_input(300, 4, 2, 11);
  const SparseTensor xg(x.F().to(kGpu), x.key(), x.manager());
  BatchNorm bn(4);  // parameters on the CPU
  EXPECT_NE(error_of([&] { bn.forward(xg); }).find("the weight on cuda:0"), std::string::npos);
  const Segments seg = single_segment(x.size());
  const NormStats st = normalize_statistics(xg.F(), seg, 1e-5);
  EXPECT_NE(error_of([&] {
              normalize_backward(x.F(), xg.F(), seg, st, fk::Tensor(), true, true, false, false);
            }).find("the gradient on cuda:0"),
            std::string::npos);
}

}  // namespace
}  // namespace minkowski
