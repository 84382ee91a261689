// One training step (nn/segmentation.h's train_step: forward, cross-entropy,
// backward, optimizer) of networks moved to the GPU with Module::to, against
// the same step on the CPU from the same weights:
//   - a MinkUNet18 (its 2-blocks-per-stage layout, narrower planes) in f32
//     with features on the device and coordinates on the host or on the
//     device: loss, every gradient and every updated weight within a
//     tolerance derived from the CPU's own f32 rounding (how far the CPU f32
//     step lands from the CPU f64 step on the same weights);
//   - an f64 network of the other layers on that path and a convolution
//     (Linear, BatchNorm, ReLU, max pooling, a 3^3 convolution on the
//     pooled map (cuBLAS DGEMM), unpooling, channel concatenation, Dropout
//     (its mask drawn on the host from one reseeded generator for both),
//     weighted cross-entropy with ignored rows, gradient clipping, Adam) to
//     1e-10;
//   - a generated scene batch moved by data::to_device with and without its
//     coordinates (as `minkowski train --coords`): same rows and labels, the
//     maps built on the device in the first, and the same step either way;
//   - the optimizers' device updates bitwise equal to the host loops';
//   - the GradScaler's finiteness check on device gradients;
//   - a graph recorded before Module::to refusing its backward.
// Deterministic convolution (set_deterministic) so the run is reproducible.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/profile.h"
#include "fk/test_util.h"
#include "minkowski/data/batch.h"
#include "minkowski/nn/conv.h"
#include "minkowski/nn/layers.h"
#include "minkowski/nn/loss.h"
#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/norm.h"
#include "minkowski/nn/optim.h"
#include "minkowski/nn/segmentation.h"

namespace minkowski {
namespace {

using fk::test::max_abs;
using fk::test::max_abs_diff;

using cuda_test::DeterministicScope;
using cuda_test::expect_close;
using cuda_test::kGpu;
using cuda_test::random_rows;
using cuda_test::random_values;

// dst's parameters and buffers set to src's values (converted), in order.
void copy_state(const nn::Module& dst, const nn::Module& src) {
  fk::autograd::NoGradGuard no_grad;
  const nn::NamedTensors d = dst.state(), s = src.state();
  ASSERT_EQ(d.size(), s.size());
  for (size_t i = 0; i < d.size(); ++i) {
    fk::Tensor t = d[i].second;
    t.copy_(s[i].second);
  }
}

// |gpu - cpu32| <= 8 |cpu32 - cpu64| + 128 ulp(f32) of the largest |cpu64|:
// the device's f32 rounding (other summation orders: cuBLAS, device
// reductions) may land anywhere the CPU's own f32 rounding could, a few times
// over; the floor covers values the CPU's f32 happens to get (nearly) exact.
void expect_within_f32_noise(const fk::Tensor& gpu, const fk::Tensor& cpu32,
                             const fk::Tensor& cpu64, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu32.shape()) << what;
  const double noise = max_abs_diff(cpu32, cpu64);
  const double tol = 8 * noise + 128 * std::ldexp(1.0, -24) * max_abs(cpu64);
  EXPECT_LE(max_abs_diff(gpu, cpu32), tol) << what << " (CPU f32 - f64: " << noise << ")";
}

struct Scene {
  fk::Tensor coords, features, labels;  // on the CPU
};

// n distinct voxels in [-16, 16)^3 of one batch item (so every level down to
// stride 16 holds several rows), features uniform in [-1, 1), labels in
// [0, classes) with every 7th row ignored.
Scene scene(int64_t n, int64_t channels, int64_t classes, unsigned seed) {
  const std::vector<int32_t> rows = random_rows(3, n, 15, 1, 1, seed);
  Scene s;
  s.coords = fk::from_vector(rows, fk::Dims{n, 4});
  s.features = random_values({n, channels}, 1.0, seed + 1);
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[i] = i % 7 == 3 ? nn::kIgnoreIndex : (i * 5 + seed) % classes;
  s.labels = fk::from_vector(y, fk::Dims{n});
  return s;
}

nn::MinkUNetOptions small_unet18(fk::DType dtype) {
  nn::MinkUNetOptions o = nn::minkunet_options("18", 3, 5, 3);
  o.planes = {8, 16, 16, 16, 16, 16, 8, 8};
  o.init_dim = 8;
  o.dtype = dtype;
  return o;
}

// The step on the GPU, coordinates on the host or on the device.
void expect_unet_step_matches_the_cpu(bool device_coordinates) {
  const DeterministicScope deterministic(true);
  const Scene s = scene(500, 3, 5, device_coordinates ? 41 : 31);
  fk::manual_seed(3);
  nn::MinkUNet cpu32(small_unet18(fk::DType::F32));
  nn::MinkUNet cpu64(small_unet18(fk::DType::F64)), gpu(small_unet18(fk::DType::F32));
  copy_state(cpu64, cpu32);
  copy_state(gpu, cpu32);
  gpu.to(kGpu);
  for (const auto& [name, t] : gpu.state()) ASSERT_EQ(t.device(), kGpu) << name;
  const nn::SgdOptions sgd{0.05, 0.9, 1e-4, false};
  nn::Sgd opt32(cpu32.parameters(), sgd), opt64(cpu64.parameters(), sgd),
      optg(gpu.parameters(), sgd);
  const nn::StepResult r32 =
      nn::train_step(cpu32, opt32, SparseTensor(s.features, s.coords), s.labels);
  const nn::StepResult r64 =
      nn::train_step(cpu64, opt64, SparseTensor(s.features.to(fk::DType::F64), s.coords), s.labels);
  const fk::Tensor coords = device_coordinates ? s.coords.to(kGpu) : s.coords;
  fk::profile::clear_trace();
  fk::profile::set_tracing(true);
  const nn::StepResult rg =
      nn::train_step(gpu, optg, SparseTensor(s.features.to(kGpu), coords), s.labels.to(kGpu));
  fk::profile::set_tracing(false);
  const std::vector<fk::profile::EventTotal> events = fk::profile::event_totals();
  fk::profile::clear_trace();
  const auto calls = [&](const std::string& name) {
    for (const auto& e : events)
      if (e.name == name) return e.calls;
    return int64_t{0};
  };
  EXPECT_GT(calls("minkowski.kernel_map.build"), 0);
  if (device_coordinates) {
    // Built on the device and used there: no map's pairs came back to the
    // host (they are fetched only by a host read, pair_rows.h). Identity maps
    // (1x1 convolutions onto the same rows) have no pairs to build: their
    // device copies are made from their size (upload_kernel_map).
    EXPECT_EQ(calls("minkowski.kernel_map.download"), 0);
  }
  const std::string where = device_coordinates ? "device coordinates: " : "host coordinates: ";
  EXPECT_LE(std::fabs(rg.loss - r32.loss),
            8 * std::fabs(r32.loss - r64.loss) + std::ldexp(1.0, -20) * std::fabs(r64.loss))
      << where << "loss " << rg.loss << " vs " << r32.loss << " (f64 " << r64.loss << ")";
  const nn::NamedTensors pg = gpu.named_parameters(), p32 = cpu32.named_parameters(),
                         p64 = cpu64.named_parameters();
  for (size_t i = 0; i < pg.size(); ++i) {
    const std::string& name = pg[i].first;
    ASSERT_EQ(pg[i].second.device(), kGpu) << name;
    expect_within_f32_noise(pg[i].second.grad(), p32[i].second.grad(), p64[i].second.grad(),
                            where + name + " gradient");
    expect_within_f32_noise(pg[i].second, p32[i].second, p64[i].second, where + name);
  }
  const nn::NamedTensors bg = gpu.named_buffers(), b32 = cpu32.named_buffers(),
                         b64 = cpu64.named_buffers();
  for (size_t i = 0; i < bg.size(); ++i)
    expect_within_f32_noise(bg[i].second, b32[i].second, b64[i].second, where + bg[i].first);
}

// data::to_device, as `minkowski train --device cuda` moves each batch: with
// its coordinates (--coords device) the rows, features and labels keep their
// order in a device map of a manager of its own, and a step on it builds its
// kernel maps there (no host pairs uploaded, none downloaded); without them
// (--coords host) the features stay on the batch's host map and the maps
// are uploaded. From the same weights, the two steps (deterministic) give
// the same loss and weights, and inference after them the same logits.
TEST(MinkowskiCudaTrainStep, BatchToDeviceKeepsTheRowsAndBuildsTheMapsThere) {
  MK_SKIP_WITHOUT_GPU();
  const DeterministicScope deterministic(true);
  data::SceneOptions small;
  small.room_min = small.room_max = 2.0;
  small.min_objects = small.max_objects = 1;
  small.density = 60.0;
  const data::Batch b = data::scene_batch(small, {7, 8}, 0.2);
  ASSERT_GT(b.input.size(), 100);
  const data::Batch host = data::to_device(b, kGpu, false);
  const data::Batch dev = data::to_device(b, kGpu, true);
  EXPECT_EQ(host.input.manager(), b.input.manager());
  EXPECT_NE(dev.input.manager(), b.input.manager());
  EXPECT_NE(dev.input.manager()->device_map(dev.input.key()), nullptr);
  EXPECT_EQ(dev.input.C().to_vector<int32_t>(), b.input.C().to_vector<int32_t>());
  for (const data::Batch* m : {&host, &dev}) {
    ASSERT_EQ(m->input.F().device(), kGpu);
    ASSERT_EQ(m->labels.device(), kGpu);
    EXPECT_EQ(m->input.F().to_vector<float>(), b.input.F().to_vector<float>());
    EXPECT_EQ(m->labels.to_vector<int64_t>(), b.labels.to_vector<int64_t>());
  }
  EXPECT_EQ(data::to_device(b, fk::kCPU, true).input.manager(), b.input.manager());

  fk::manual_seed(3);
  nn::MinkUNet on_host(small_unet18(fk::DType::F32)), on_dev(small_unet18(fk::DType::F32));
  copy_state(on_dev, on_host);
  on_host.to(kGpu);
  on_dev.to(kGpu);
  const nn::SgdOptions sgd{0.05, 0.9, 1e-4, false};
  nn::Sgd opt_host(on_host.parameters(), sgd), opt_dev(on_dev.parameters(), sgd);
  auto traced_step = [](nn::MinkUNet& net, nn::Sgd& opt, const data::Batch& batch, int64_t* uploads,
                        int64_t* downloads) {
    fk::profile::clear_trace();
    fk::profile::set_tracing(true);
    const nn::StepResult r = nn::train_step(net, opt, batch.input, batch.labels);
    fk::profile::set_tracing(false);
    *uploads = *downloads = 0;
    for (const auto& e : fk::profile::event_totals()) {
      if (e.name == "minkowski.kernel_map.upload") *uploads = e.calls;
      if (e.name == "minkowski.kernel_map.download") *downloads = e.calls;
    }
    fk::profile::clear_trace();
    return r;
  };
  int64_t host_uploads = 0, host_downloads = 0, dev_uploads = 0, dev_downloads = 0;
  const nn::StepResult rh = traced_step(on_host, opt_host, host, &host_uploads, &host_downloads);
  const nn::StepResult rd = traced_step(on_dev, opt_dev, dev, &dev_uploads, &dev_downloads);
  // The device step's only "uploads" are identity maps, made there from their size.
  EXPECT_LT(dev_uploads, host_uploads);
  EXPECT_EQ(dev_downloads, 0);
  EXPECT_EQ(rd.loss, rh.loss);
  const nn::NamedTensors ph = on_host.named_parameters(), pd = on_dev.named_parameters();
  for (size_t i = 0; i < ph.size(); ++i)
    EXPECT_EQ(pd[i].second.to_vector<float>(), ph[i].second.to_vector<float>()) << ph[i].first;
  // Inference on the moved batch (`minkowski predict --device`): the same logits.
  nn::ConfusionMatrix ch(5), cd(5);
  const fk::Tensor lh = nn::evaluate(on_host, host.input, host.labels, ch);
  const fk::Tensor ld = nn::evaluate(on_dev, dev.input, dev.labels, cd);
  EXPECT_EQ(ld.to_vector<float>(), lh.to_vector<float>());
  EXPECT_EQ(cd.miou(), ch.miou());
}

TEST(MinkowskiCudaTrainStep, MinkUNet18StepMatchesTheCpuWithHostCoordinates) {
  MK_SKIP_WITHOUT_GPU();
  expect_unet_step_matches_the_cpu(false);
}

TEST(MinkowskiCudaTrainStep, MinkUNet18StepMatchesTheCpuWithDeviceCoordinates) {
  MK_SKIP_WITHOUT_GPU();
  expect_unet_step_matches_the_cpu(true);
}

// Linear -> BN -> ReLU -> max pool (k2 s2) -> 3^3 convolution -> BN -> ReLU
// -> unpool onto the input's map -> cat with the first activation -> Dropout
// -> Linear.
class PoolingNet : public nn::SparseModule {
 public:
  explicit PoolingNet(fk::DType t) {
    in_ = register_module("in", std::make_shared<nn::Linear>(3, 6, true, t));
    in_norm_ = register_module("in_norm", std::make_shared<nn::BatchNorm>(6, 1e-5, 0.1, t));
    pool_ = register_module("pool", std::make_shared<nn::Pooling>(PoolingMode::Max, 2, 2));
    nn::ConvOptions conv;
    conv.in_channels = conv.out_channels = 6;
    conv.dtype = t;
    mid_ = register_module("mid", std::make_shared<nn::Convolution>(conv));
    mid_norm_ = register_module("mid_norm", std::make_shared<nn::BatchNorm>(6, 1e-5, 0.1, t));
    unpool_ =
        register_module("unpool", std::make_shared<nn::Pooling>(PoolingMode::Average, 2, 2, true));
    drop_ = register_module("drop", std::make_shared<nn::Dropout>(0.25));
    head_ = register_module("head", std::make_shared<nn::Linear>(12, 4, true, t));
  }
  SparseTensor forward(const SparseTensor& x) override {
    auto relu = [](const SparseTensor& y) { return nn::with_features(y, fk::relu(y.F())); };
    const SparseTensor a = relu(in_norm_->forward(in_->forward(x)));
    const SparseTensor b = relu(mid_norm_->forward(mid_->forward(pool_->forward(a))));
    return head_->forward(drop_->forward(nn::cat(unpool_->forward(b), a)));
  }

 private:
  std::shared_ptr<nn::Linear> in_, head_;
  std::shared_ptr<nn::Convolution> mid_;
  std::shared_ptr<nn::BatchNorm> in_norm_, mid_norm_;
  std::shared_ptr<nn::Pooling> pool_, unpool_;
  std::shared_ptr<nn::Dropout> drop_;
};

TEST(MinkowskiCudaTrainStep, F64StepWithAConvolutionMatchesTheCpu) {
  MK_SKIP_WITHOUT_GPU();
  const Scene s = scene(800, 3, 4, 51);
  fk::manual_seed(5);
  PoolingNet cpu(fk::DType::F64), gpu(fk::DType::F64);
  copy_state(gpu, cpu);
  gpu.to(kGpu);
  const nn::AdamOptions adam{1e-2, 0.9, 0.999, 1e-8, 1e-3, true};
  nn::Adam oc(cpu.parameters(), adam), og(gpu.parameters(), adam);
  nn::StepOptions step;
  step.class_weights = fk::from_vector(std::vector<double>{1.0, 2.0, 0.5, 1.5}, fk::Dims{4});
  step.clip_norm = 0.05;  // below the gradients' norm: clipping acts
  const fk::Tensor f = s.features.to(fk::DType::F64);
  for (int k = 0; k < 2; ++k) {  // the second step reads the moments the first left
    fk::manual_seed(100 + k);    // one Dropout mask for both
    const nn::StepResult rc = nn::train_step(cpu, oc, SparseTensor(f, s.coords), s.labels, step);
    fk::manual_seed(100 + k);
    const nn::StepResult rg =
        nn::train_step(gpu, og, SparseTensor(f.to(kGpu), s.coords), s.labels, step);
    EXPECT_NEAR(rg.loss, rc.loss, 1e-10 * std::fabs(rc.loss)) << "step " << k;
  }
  const nn::NamedTensors sg = gpu.state(), sc = cpu.state();
  for (size_t i = 0; i < sg.size(); ++i) {
    ASSERT_EQ(sg[i].second.device(), kGpu) << sg[i].first;
    expect_close(sg[i].second, sc[i].second, 1e-10, sg[i].first);
    if (sg[i].second.requires_grad())
      expect_close(sg[i].second.grad(), sc[i].second.grad(), 1e-10, sg[i].first + " gradient");
  }
  const nn::NamedTensors mg = og.state(), mc = oc.state();
  for (size_t i = 0; i < mg.size(); ++i)
    expect_close(mg[i].second, mc[i].second, 1e-10, mg[i].first);
}

// Parameters with gradients, on the CPU and (a copy) on the GPU.
struct Params {
  std::vector<fk::Tensor> cpu, gpu;
};
Params params_of(fk::DType t, uint64_t seed) {
  Params p;
  for (const fk::Dims& shape : {fk::Dims{5, 7}, fk::Dims{3}, fk::Dims{2, 3, 4}}) {
    fk::Tensor c = random_values(shape, 1.0, seed++).to(t);
    c.set_requires_grad(true);
    p.cpu.push_back(c);
    p.gpu.push_back(cuda_test::leaf(c, kGpu));
  }
  return p;
}
void set_grads(Params& p, uint64_t seed) {
  for (size_t i = 0; i < p.cpu.size(); ++i) {
    const fk::Tensor g = random_values(p.cpu[i].shape(), 0.5, seed + i).to(p.cpu[i].dtype());
    p.cpu[i].set_grad(g);
    p.gpu[i].set_grad(g.to(kGpu));
  }
}

TEST(MinkowskiCudaTrainStep, OptimizerUpdatesAreTheHostLoopsBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  for (fk::DType t : {fk::DType::F32, fk::DType::F64}) {
    const std::vector<std::pair<
        std::string, std::function<std::unique_ptr<nn::Optimizer>(std::vector<fk::Tensor>)>>>
        makers = {
            {"sgd", [](auto ps) { return std::make_unique<nn::Sgd>(ps, nn::SgdOptions{0.1}); }},
            {"sgd nesterov",
             [](auto ps) {
               return std::make_unique<nn::Sgd>(ps, nn::SgdOptions{0.1, 0.9, 0.01, true});
             }},
            {"adam",
             [](auto ps) {
               return std::make_unique<nn::Adam>(ps, nn::AdamOptions{0.01, 0.9, 0.99, 1e-8, 0.01});
             }},
            {"adamw",
             [](auto ps) {
               return std::make_unique<nn::Adam>(ps,
                                                 nn::AdamOptions{0.01, 0.8, 0.9, 1e-6, 0.1, true});
             }},
        };
    for (const auto& [name, make] : makers) {
      Params p = params_of(t, 61);
      auto oc = make(p.cpu), og = make(p.gpu);
      for (int k = 0; k < 3; ++k) {
        set_grads(p, 70 + 10 * k);
        if (k == 0) {  // the first parameter misses a step: its own count, its own launch
          p.cpu[0].set_grad(fk::Tensor());
          p.gpu[0].set_grad(fk::Tensor());
        }
        oc->step();
        og->step();
      }
      const std::string what = name + " " + fk::name(t);
      for (size_t i = 0; i < p.cpu.size(); ++i) expect_close(p.gpu[i], p.cpu[i], 0, what);
      const nn::NamedTensors mc = oc->state(), mg = og->state();
      for (size_t i = 0; i < mc.size(); ++i) {
        if (!mc[i].first.ends_with("step")) {  // the step counts are host scalars
          EXPECT_EQ(mg[i].second.device(), kGpu) << what;
        }
        expect_close(mg[i].second, mc[i].second, 0, what + " " + mc[i].first);
      }
    }
  }
}

// Adam updates a network's parameters in lists, one launch per 64 of a dtype
// run: 150 parameters (f32, then f64, then f32 again; one of 9,000 elements
// spans three of the kernel's blocks) in 2 + 1 + 1 launches, with one
// parameter without a gradient skipped, each value the host loop's.
TEST(MinkowskiCudaTrainStep, AdamUpdatesParametersInListsBitForBit) {
  MK_SKIP_WITHOUT_GPU();
  Params p;
  for (int i = 0; i < 150; ++i) {
    const fk::DType t = i >= 100 && i < 120 ? fk::DType::F64 : fk::DType::F32;
    const fk::Dims shape = i == 7 ? fk::Dims{9000} : fk::Dims{1 + i % 5, 3};
    fk::Tensor c = random_values(shape, 1.0, 500 + static_cast<uint64_t>(i)).to(t);
    c.set_requires_grad(true);
    p.cpu.push_back(c);
    p.gpu.push_back(cuda_test::leaf(c, kGpu));
  }
  const nn::AdamOptions o{0.01, 0.9, 0.99, 1e-8, 0.01};
  nn::Adam oc(p.cpu, o), og(p.gpu, o);
  for (int k = 0; k < 2; ++k) {
    set_grads(p, 900 + 200 * k);
    p.cpu[3].set_grad(fk::Tensor());
    p.gpu[3].set_grad(fk::Tensor());
    oc.step();
    const int64_t before = fk::profile::counters().launches;
    og.step();
    // The first step also makes the moment buffers (fills).
    if (k == 1) {
      EXPECT_EQ(fk::profile::counters().launches - before, 4);
    }
  }
  for (size_t i = 0; i < p.cpu.size(); ++i)
    expect_close(p.gpu[i], p.cpu[i], 0, "parameter " + std::to_string(i));
}

TEST(MinkowskiCudaTrainStep, ClippingAndTheScalerCheckReadDeviceGradients) {
  MK_SKIP_WITHOUT_GPU();
  Params p = params_of(fk::DType::F64, 81);
  set_grads(p, 91);
  const double nc = nn::clip_grad_norm(p.cpu, 0.5), ng = nn::clip_grad_norm(p.gpu, 0.5);
  EXPECT_NEAR(ng, nc, 1e-12 * nc);
  for (size_t i = 0; i < p.cpu.size(); ++i)
    expect_close(p.gpu[i].grad(), p.cpu[i].grad(), 1e-12, "clipped gradient");
  fk::amp::GradScaler scaler;
  std::vector<fk::Tensor> grads{p.gpu[0].grad(), p.gpu[1].grad()};
  EXPECT_TRUE(scaler.unscale_and_check(grads));
  std::vector<double> v(3, 1.0);
  v[1] = std::nan("");
  std::vector<fk::Tensor> bad{fk::from_vector(v, fk::Dims{3}).to(kGpu)};
  EXPECT_FALSE(scaler.unscale_and_check(bad));
  v[1] = INFINITY;
  bad = {fk::from_vector(v, fk::Dims{3}).to(kGpu)};
  EXPECT_FALSE(scaler.unscale_and_check(bad));
}

// Module::to swaps storages: a graph that saved a parameter before the move
// (here at version 0, as a fresh storage starts) must refuse its backward.
TEST(MinkowskiCudaTrainStep, AGraphRecordedBeforeToRefusesItsBackward) {
  MK_SKIP_WITHOUT_GPU();
  nn::Linear l(3, 2, true, fk::DType::F64);
  const fk::Tensor w = l.parameters()[0];
  fk::Tensor y = fk::sum(fk::mul(w, w));
  l.to(kGpu);
  EXPECT_NE(fk::test::error_of([&] { y.backward(); }).find("a saved tensor at version"),
            std::string::npos);
}

TEST(MinkowskiCudaTrainStep, MismatchedDevicesAreClearErrors) {
  MK_SKIP_WITHOUT_GPU();
  Params p = params_of(fk::DType::F32, 101);
  // A host gradient of a device parameter is refused where it is set, before
  // an optimizer could read it.
  EXPECT_NE(fk::test::error_of([&] {
              p.gpu[0].set_grad(fk::zeros(p.gpu[0].shape()));
            }).find("device cuda:0"),
            std::string::npos);
}

}  // namespace
}  // namespace minkowski
