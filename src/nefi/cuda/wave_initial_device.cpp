// WaveInitialConditionOperator on a CUDA device
// (operators/wave/wave_initial_device.h): the photoacoustic map and its exact
// adjoint as launches of wave.cu on the device's current stream, in
// wave_shots.h's order (initial_value_forward / initial_value_adjoint), with
// the operator's tables uploaded once per device and dtype (tables_on). Per
// apply: 2 kernels for the start, the leapfrog steps and their samples as one
// cooperative launch (NEFI_WAVE_FUSED; else 1 or 2 kernels per step, PML 2
// or 3, and one sample each), one kernel for the sensor; the backward the
// same in reverse plus 3 kernels for the start's transpose. No host reads,
// no stored states.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/runtime.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/cuda/kernels.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/cuda/wave_device_kernels.h"
#include "nefi/cuda/wave_kernels.h"
#include "nefi/cuda/wave_shots.h"
#include "nefi/operators/wave/wave_device.h"
#include "nefi/operators/wave/wave_initial_condition.h"
#include "nefi/operators/wave/wave_initial_device.h"

namespace nefi {
namespace {

template <typename T>
using Shots = cuda::WaveShots<T, cuda::WaveDeviceKernels>;

// The solve of op on the tables' device: one shot, no source, a sample at
// every leapfrog step.
template <typename T>
Shots<T> initial_shots(const WaveInitialConditionOperator& op,
                       const wave::WaveInitialDeviceTables& t, void* stream) {
  const wave::ShotGeometry& geo = op.geometry();
  const wave::WaveGrid& gr = geo.grid;
  cuda::WaveShotsSetup<T> s;
  s.cells = cuda::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  const T* alpha[3] = {nullptr, nullptr, nullptr};
  const T* beta[3] = {nullptr, nullptr, nullptr};
  for (int d = 0; d < 3; ++d)
    if (s.cells.pml && gr.active[d])
      alpha[d] = t.base.alpha[d].data<T>(), beta[d] = t.beta[d].data<T>();
  s.co = cuda::coefficients_view<T>(gr, t.base.q2.data<T>(), t.base.b.data<T>(), t.k.data<T>(),
                                    t.base.a_dt2.data<T>(), alpha, beta);
  s.receivers = cuda::receivers_of(t.base);
  s.injection = cuda::injection_of(t.base);
  s.wavelet = nullptr;
  s.shots = 1;
  s.n_t = gr.n_t;
  s.n_steps = gr.n_steps();
  s.substeps = gr.substeps;
  s.device = t.base.device;
  s.stream = stream;
  s.fused = wave_fused_runs() && cuda::cooperative_launch_supported(t.base.device.index);
  return Shots<T>(s);
}

cuda::WaveSensor sensor_of(const WaveInitialConditionOperator& op,
                           const wave::WaveInitialDeviceTables& t) {
  cuda::WaveSensor s;
  s.w = t.lowpass.defined() ? t.lowpass.data<double>() : nullptr;
  s.half = t.half;
  s.every = op.substeps();
  s.n_t = op.config().wave.n_t;
  return s;
}

template <typename T>
struct WaveInitialDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const WaveInitialConditionOperator> op;  // shares the model and the tables
  fk::Device device;
  const char* name() const override { return "WaveInitialDeviceBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>&) override {}
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("wave_initial_device_backward");
    fk::cuda::detail::DeviceGuard guard(device.index);
    void* stream = fk::cuda::current_stream(device.index);
    fk::Tensor g = grads[0].device() == device ? grads[0] : grads[0].to(device);
    g = g.to(fk::DType::F64).contiguous();  // the CPU's adjoint reads the gradient as f64
    const std::shared_ptr<const wave::WaveInitialDeviceTables> t =
        op->tables_on(device, fk::dtype_of<T>());
    const fk::Tensor out = initial_shots<T>(*op, *t, stream)
                               .initial_value_adjoint(g.data<double>(), t->start_k.data<T>(),
                                                      sensor_of(*op, *t), op->shape());
    fk::cuda::after_op(device.index);
    return {out};
  }
};

template <typename T>
fk::Tensor run_initial_on_device(const WaveInitialConditionOperator& op, const fk::Tensor& p0_in) {
  const fk::Device d = p0_in.device();
  const bool grad = fk::autograd::needs_grad(p0_in);
  fk::autograd::NoGradGuard ng;
  fk::cuda::detail::DeviceGuard guard(d.index);
  void* stream = fk::cuda::current_stream(d.index);
  const fk::Tensor p0 = p0_in.is_contiguous() ? p0_in.detach() : p0_in.contiguous();
  const std::shared_ptr<const wave::WaveInitialDeviceTables> t = op.tables_on(d, fk::dtype_of<T>());
  fk::Tensor out =
      initial_shots<T>(op, *t, stream)
          .initial_value_forward(p0.data<T>(), t->start_k.data<T>(), sensor_of(op, *t));
  if (grad) {
    auto node = std::make_shared<WaveInitialDeviceBackward<T>>();
    node->op = std::make_shared<const WaveInitialConditionOperator>(op);
    node->device = d;
    fk::autograd::record(node, {p0_in}, out);
  }
  fk::cuda::after_op(d.index);
  return out;
}

}  // namespace

fk::Tensor wave_initial_device(const WaveInitialConditionOperator& op, const fk::Tensor& p0) {
  fk::profile::OpScope scope("wave_initial_device");
  FK_CHECK(p0.device().is_cuda(), "nefi::WaveInitialConditionOperator", "p0 on a CUDA device",
           p0.device().str());
  if (p0.dtype() == fk::DType::F32) return run_initial_on_device<float>(op, p0);
  return run_initial_on_device<double>(op, p0);
}

}  // namespace nefi
