// The checkpointed Gray-Scott solve on a CUDA device
// (operators/reaction_diffusion/gray_scott_device.h): the launches of
// gray_scott.cu in gray_scott_rollout.h's order on the device's current
// stream, and the autograd node that runs the discrete adjoint there.
// Forward: one kernel per substep (both diffusions, the reaction, the
// checkpoint copy and the observed snapshot fused). Backward: per block of
// `every` substeps, the block recomputed from its checkpoint, then one
// adjoint kernel per substep. On grids of at most device_fused_cells cells
// the whole forward, and the whole backward, is one single-block launch
// running the same calls with a barrier between substeps. Nothing moves between host and device
// inside the stepping; the initial state is uploaded once per device and grid
// (ReactionDiffusionOperator::initial_state_on), which prepare_tables at a
// stage start (or an eager first apply) does before any capture. An eager apply reads the field's
// range back before stepping (the Du check and the substep count, as the
// CPU path); while the stream is captured it cannot, so the schedule comes
// from field_max and a one-block guard kernel flags a field outside the
// range it holds for (schedule_limit), turning the snapshots into NaN.
// Memory (f64): the state twice, the snapshots, and with a gradient the
// checkpoints ceil(S / every) x 2n, plus in the backward `every` x 2n of
// recomputed states and 2 x 2n of cotangents.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/graph.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "nefi/cuda/gray_scott_kernels.h"
#include "nefi/cuda/gray_scott_rollout.h"
#include "nefi/operators/reaction_diffusion/gray_scott_device.h"

namespace nefi {
namespace {

constexpr const char* kWho = "nefi::ReactionDiffusionOperator";

cuda::GrayScottCoefficients coefficients(const ReactionDiffusionOperator& op, double tau) {
  const gray_scott::Grid g = op.grid();
  const ReactionDiffusionOptions& o = op.options();
  cuda::GrayScottCoefficients k;
  k.n0 = static_cast<int>(g.n0);
  k.n1 = static_cast<int>(g.n1);
  k.wrap = g.boundary == gray_scott::Boundary::kPeriodic;
  k.s0 = 1.0 / (g.h0 * g.h0);  // as gray_scott.cpp rounds them
  k.s1 = 1.0 / (g.h1 * g.h1);
  k.tau = tau;
  k.F = o.F;
  k.k = o.rates.k;
  k.Du = o.rates.Du;
  k.Dv = o.rates.Dv;
  return k;
}

cuda::GrayScottFields fields_of(RDUnknown unknown, const double* x) {
  cuda::GrayScottFields f;
  (unknown == RDUnknown::kF ? f.F : unknown == RDUnknown::kK ? f.k : f.Du) = x;
  return f;
}

cuda::GrayScottRollout rollout_of(const ReactionDiffusionOperator& op, const RDSchedule& sc) {
  cuda::GrayScottRollout r;
  r.n = op.grid().size();
  r.total = sc.total;
  r.every = sc.every;
  r.obs = sc.obs;
  r.observe_u = op.options().observe_u;
  r.observe_v = op.options().observe_v;
  return r;
}

// gray_scott_rollout.h's launcher: the kernels on one stream, counted.
struct DeviceLaunch {
  DeviceLaunch(const cuda::GrayScottCoefficients& kc, const cuda::GrayScottFields& fc, void* s)
      : k(kc), f(fc), stream(s) {}
  cuda::GrayScottCoefficients k;
  cuda::GrayScottFields f;
  void* stream = nullptr;
  int64_t launches = 0;
  void step(const cuda::GrayScottStep& b) {
    cuda::launch_gray_scott_step(k, f, b, stream);
    ++launches;
  }
  void adjoint(const cuda::GrayScottAdjoint& b) {
    cuda::launch_gray_scott_adjoint(k, f, b, stream);
    ++launches;
  }
};

struct GrayScottDeviceBackward : fk::autograd::Node {
  cuda::GrayScottCoefficients k;
  cuda::GrayScottRollout rollout;
  RDUnknown unknown = RDUnknown::kF;
  // The unknown, f64 on the device: an alias of the input when that was
  // contiguous f64, so its version is checked.
  fk::autograd::SavedTensor field;
  fk::autograd::SavedTensor checkpoints;  // (blocks, 2, n0, n1) f64 on the device
  fk::Dims in_shape;
  fk::DType dtype = fk::DType::F64;
  fk::Device device;
  bool fused = false;
  const char* name() const override { return "GrayScottDeviceBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(field);
    fn(checkpoints);
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor& field = this->field.unpack(name());
    const fk::Tensor& checkpoints = this->checkpoints.unpack(name());
    fk::profile::OpScope scope("gray_scott_device_adjoint");
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    if (g.dtype() != fk::DType::F64) g = g.to(fk::DType::F64);
    if (!g.is_contiguous()) g = g.contiguous();
    fk::cuda::detail::DeviceGuard guard(device.index);
    const fk::TensorOptions f64{fk::DType::F64, device};
    const int64_t n0 = k.n0, n1 = k.n1;
    const fk::Tensor block = fk::empty({rollout.every, 2, n0, n1}, f64);
    const fk::Tensor cot0 = fk::zeros({2, n0, n1}, f64), cot1 = fk::empty({2, n0, n1}, f64);
    fk::Tensor grad = fk::zeros(in_shape, f64);
    cuda::GrayScottAdjoint proto;
    (unknown == RDUnknown::kF   ? proto.grad_F
     : unknown == RDUnknown::kK ? proto.grad_k
                                : proto.grad_Du) = grad.data<double>();
    DeviceLaunch launch(k, fields_of(unknown, field.data<double>()),
                        fk::cuda::current_stream(device.index));
    if (fused) {
      cuda::launch_gray_scott_fused_backward(launch.k, launch.f, cuda::fused_rollout(rollout),
                                             checkpoints.data<double>(), block.data<double>(),
                                             g.data<double>(), cot0.data<double>(),
                                             cot1.data<double>(), proto, launch.stream);
      launch.launches = 1;
    } else {
      double* const cot[2] = {cot0.data<double>(), cot1.data<double>()};
      cuda::gray_scott_backward(rollout, checkpoints.data<double>(), block.data<double>(),
                                g.data<double>(), cot, proto, launch);
    }
    grad.bump_version();
    fk::profile::count_launch(launch.launches);
    fk::cuda::after_op(device.index);
    return {grad.to(dtype)};
  }
};

}  // namespace

fk::Tensor gray_scott_device(const ReactionDiffusionOperator& op, const fk::Tensor& x) {
  fk::profile::OpScope scope("gray_scott_device");
  const fk::Device d = x.device();
  FK_CHECK(d.is_cuda(), kWho, "a field on a CUDA device", d.str());
  const gray_scott::Grid grid = op.grid();
  FK_CHECK(2 * grid.size() < std::numeric_limits<int32_t>::max(), kWho,
           "a grid of fewer than 2^30 cells on a device (32-bit cell indices)",
           fk::to_text(grid.n0) + " x " + fk::to_text(grid.n1));
  const ReactionDiffusionOptions& o = op.options();
  fk::Tensor field;
  {
    fk::autograd::NoGradGuard ng;
    field = x.detach().to(fk::DType::F64);
    if (!field.is_contiguous()) field = field.contiguous();
  }
  const bool capturing = fk::cuda::capturing(d.index);
  double peak = -std::numeric_limits<double>::infinity();  // m from field_max alone
  if (!capturing) {
    fk::autograd::NoGradGuard ng;
    const std::vector<double> range =
        fk::stack({fk::amin(field), fk::amax(field)}, 0).to_vector<double>();
    op.check_field(range[0]);
    peak = range[1];
  }
  const RDSchedule sc = op.schedule(peak);
  const cuda::GrayScottRollout rollout = rollout_of(op, sc);
  const bool record = fk::autograd::needs_grad(x);
  const fk::Tensor initial = op.initial_state_on(d);
  fk::cuda::detail::DeviceGuard guard(d.index);
  void* stream = fk::cuda::current_stream(d.index);
  const fk::TensorOptions f64{fk::DType::F64, d};
  const fk::Tensor state0 = fk::empty({2, grid.n0, grid.n1}, f64),
                   state1 = fk::empty({2, grid.n0, grid.n1}, f64);
  const fk::Tensor checkpoints =
      record ? fk::empty({rollout.blocks(), 2, grid.n0, grid.n1}, f64) : fk::Tensor();
  fk::Tensor out = fk::empty(op.output_shape(x.shape()), f64);
  fk::Tensor poison;
  int64_t guards = 0;
  if (capturing) {
    poison = fk::empty({1}, {fk::DType::I32, d});
    const double lo = o.unknown == RDUnknown::kDu ? 0.0 : -std::numeric_limits<double>::infinity();
    cuda::launch_gray_scott_range_guard(field.data<double>(), static_cast<int>(grid.size()), lo,
                                        op.schedule_limit(), poison.data<int32_t>(), stream);
    guards = 1;
  }
  DeviceLaunch launch(coefficients(op, sc.tau), fields_of(o.unknown, field.data<double>()), stream);
  double* const ckpt = record ? checkpoints.data<double>() : nullptr;
  const int* const flag = capturing ? poison.data<int32_t>() : nullptr;
  const bool fused =
      grid.size() <= o.device_fused_cells && cuda::obs_count(rollout) <= cuda::kFusedMaxObs;
  if (fused) {
    cuda::launch_gray_scott_fused_forward(
        launch.k, launch.f, cuda::fused_rollout(rollout), initial.data<double>(),
        state0.data<double>(), state1.data<double>(), ckpt, out.data<double>(), flag, stream);
    launch.launches = 1;
  } else {
    double* const state[2] = {state0.data<double>(), state1.data<double>()};
    cuda::gray_scott_forward(rollout, initial.data<double>(), state, ckpt, out.data<double>(), flag,
                             launch);
  }
  out.bump_version();
  fk::profile::count_launch(launch.launches + guards);
  fk::cuda::after_op(d.index);
  fk::Tensor y = x.dtype() == fk::DType::F64 ? out : out.to(x.dtype());
  if (record) {
    auto node = std::make_shared<GrayScottDeviceBackward>();
    node->k = launch.k;
    node->rollout = rollout;
    node->unknown = o.unknown;
    node->field = field;
    node->checkpoints = checkpoints;
    node->in_shape = x.shape();
    node->dtype = x.dtype();
    node->device = d;
    node->fused = fused;
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
