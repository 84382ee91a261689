// WaveOperator on a CUDA device (operators/wave/wave_device.h): the velocity
// check, the velocity's coefficients, the shots' forward with its record and
// the autograd node whose backward runs the discrete adjoint, all as
// launches of wave.cu on the device's current stream in wave_shots.h's order.
// Per apply: 2 kernels for the coefficients, then the forward: one
// cooperative launch (NEFI_WAVE_FUSED, wave_steps.h), or per leapfrog step
// 2 (PML: 3) kernels plus one per observed sample. The backward: per
// checkpoint block its recomputation and its adjoint steps, one launch each
// fused, else per step 2 (PML: 3) kernels plus one per observed sample;
// then 2 kernels for the gradient. Host reads: the velocity check's
// three numbers in an eager apply, none while a graph is captured.
// Memory on the device: the record (full: (N + 1) shots S; checkpoint:
// ceil(N/k) (2 + n_ψ) shots S) plus (k + 8 + 3 n_ψ) shots S while a backward runs.
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/cuda/device_guard.h"
#include "fk/cuda/graph.h"
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
#include "nefi/operators/wave/wave_operator.h"

namespace nefi {
namespace {

// The velocity's coefficients k and (PML) beta per active axis, on the device.
struct VelocityCoefficients {
  fk::Tensor k;
  std::vector<fk::Tensor> beta;
};

cuda::StencilsView stencils(const fk::Tensor& start, const fk::Tensor& index,
                            const fk::Tensor& weight) {
  return {start.data<int64_t>(), index.data<int64_t>(), weight.data<double>(), start.numel() - 1};
}

// One solve's setup from the tables, the velocity's coefficients and the stream.
template <typename T>
cuda::WaveShotsSetup<T> shots_setup(const wave::ShotGeometry& geo, const wave::WaveDeviceTables& t,
                                    const VelocityCoefficients& vc, void* stream) {
  const wave::WaveGrid& gr = geo.grid;
  cuda::WaveShotsSetup<T> s;
  s.cells = cuda::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  const T* alpha[3] = {nullptr, nullptr, nullptr};
  const T* beta[3] = {nullptr, nullptr, nullptr};
  for (int a = 0; a < s.cells.nd && s.cells.pml; ++a) {
    const int d = 3 - s.cells.nd + a;
    alpha[d] = t.alpha[d].data<T>();
    beta[d] = vc.beta[a].data<T>();
  }
  s.co = cuda::coefficients_view<T>(gr, t.q2.data<T>(), t.b.data<T>(), vc.k.data<T>(),
                                    t.a_dt2.data<T>(), alpha, beta);
  s.sources = stencils(t.source_start, t.source_index, t.source_weight);
  s.receivers = cuda::receivers_of(t);
  s.injection = cuda::injection_of(t);
  s.wavelet = t.wavelet.defined() ? t.wavelet.data<double>() : nullptr;
  s.shots = static_cast<int64_t>(geo.sources.size());
  s.n_t = gr.n_t;
  s.n_steps = gr.n_steps();
  s.substeps = gr.substeps;
  s.device = t.device;
  s.stream = stream;
  s.fused = wave_fused_runs() && cuda::cooperative_launch_supported(t.device.index);
  return s;
}

template <typename T>
cuda::AxisFields<const double> beta_per_kappa(const wave::WaveDeviceTables& t, int nd, bool pml) {
  cuda::AxisFields<const double> f;
  for (int a = 0; a < nd && pml; ++a) f.a[a] = t.beta_per_kappa[3 - nd + a].data<double>();
  return f;
}

template <typename T>
struct WaveDeviceBackward : fk::autograd::Node {
  std::shared_ptr<const wave::ShotGeometry> geo;
  std::shared_ptr<const wave::WaveDeviceTables> tables;
  // The velocity the forward ran with (contiguous, on the device): an alias
  // of the input when that was contiguous, so its version is checked.
  fk::autograd::SavedTensor c;
  VelocityCoefficients vc;
  cuda::WaveShotsRecord record;
  fk::autograd::SavedTensor held;  // record.saved again, for accounting and release
  fk::Dims shape;
  const char* name() const override { return "WaveDeviceBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(held);
    fn(c);
  }
  void release_saved() override {
    record.saved = fk::Tensor();
    Node::release_saved();
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("wave_device_backward");
    const fk::Tensor& c = this->c.unpack(name());
    const fk::Device d = c.device();
    fk::cuda::detail::DeviceGuard guard(d.index);
    void* stream = fk::cuda::current_stream(d.index);
    fk::Tensor g = grads[0].device() == d ? grads[0] : grads[0].to(d);
    g = g.to(fk::dtype_of<T>()).contiguous();
    const cuda::WaveShotsSetup<T> s = shots_setup<T>(*geo, *tables, vc, stream);
    const cuda::WaveShots<T, cuda::WaveDeviceKernels> shots(s);
    const fk::Tensor total =
        shots.kappa_gradient(record, g.data<T>(), tables->k_per_kappa.data<double>(),
                             beta_per_kappa<T>(*tables, s.cells.nd, s.cells.pml));
    fk::Tensor cbar = fk::empty(shape, {fk::dtype_of<T>(), d});
    cuda::launch_velocity_gradient(s.cells, c.data<T>(), total.data<double>(), cbar.data<T>(),
                                   stream);
    fk::profile::count_launch();
    fk::cuda::after_op(d.index);
    return {cbar};
  }
};

// check_velocity's value checks on the device: one two-pass reduction and three
// numbers read back, skipped while the stream is captured (a host read
// would end the capture; the eager warm-up step has checked the velocity
// the graph's first replay starts from).
template <typename T>
void check_values_on_device(const fk::Tensor& c, double c_max, void* stream) {
  if (fk::cuda::capturing(c.device().index)) return;
  const fk::Tensor partials =
      fk::empty({3 * cuda::velocity_stats_blocks(c.numel())}, {fk::DType::F64, c.device()});
  fk::Tensor stats = fk::empty({3}, {fk::DType::F64, c.device()});
  cuda::launch_velocity_stats(c.data<T>(), c.numel(), partials.data<double>(), stats.data<double>(),
                              stream);
  fk::profile::count_launch(2);
  const std::vector<double> v = stats.to_vector<double>();
  check_velocity_range(v[0], v[1], v[2], c_max, "wave operator");
}

template <typename T>
fk::Tensor run_on_device(const WaveOperator& op, const fk::Tensor& c_in) {
  const fk::Device d = c_in.device();
  const bool grad = fk::autograd::needs_grad(c_in);
  fk::autograd::NoGradGuard ng;
  fk::cuda::detail::DeviceGuard guard(d.index);
  void* stream = fk::cuda::current_stream(d.index);
  const fk::Tensor c = c_in.is_contiguous() ? c_in.detach() : c_in.contiguous();
  check_values_on_device<T>(c, op.config().wave.c_max, stream);

  const wave::ShotGeometry& geo = op.geometry();
  const wave::WaveGrid& gr = geo.grid;
  std::shared_ptr<const wave::WaveDeviceTables> tables = op.tables_on(d, fk::dtype_of<T>());
  const cuda::WaveCells<T> cells =
      cuda::make_wave_cells<T>(gr, geo.damping.kind == wave::Absorbing::kPml);
  VelocityCoefficients vc;
  vc.k = fk::zeros({gr.numel}, {fk::dtype_of<T>(), d});
  cuda::AxisFields<T> beta;
  for (int a = 0; a < cells.nd && cells.pml; ++a) {
    vc.beta.push_back(fk::zeros({gr.numel}, {fk::dtype_of<T>(), d}));
    beta.a[a] = vc.beta.back().data<T>();
  }
  {
    const fk::Tensor kappa = fk::zeros({gr.numel}, {fk::DType::F64, d});
    cuda::launch_padded_kappa(cells, c.data<T>(), kappa.data<double>(), stream);
    cuda::launch_velocity_coefficients(
        cells, kappa.data<double>(), tables->k_per_kappa.data<double>(),
        beta_per_kappa<T>(*tables, cells.nd, cells.pml), vc.k.data<T>(), beta, stream);
    fk::profile::count_launch(2);
  }
  const cuda::WaveShots<T, cuda::WaveDeviceKernels> shots(shots_setup<T>(geo, *tables, vc, stream));
  if (!grad) {
    fk::Tensor out = shots.forward(nullptr);
    fk::cuda::after_op(d.index);
    return out;
  }
  auto node = std::make_shared<WaveDeviceBackward<T>>();
  node->record.every = op.checkpoint_every();
  fk::Tensor out = shots.forward(&node->record);
  node->held = node->record.saved;
  node->geo = op.geometry_ptr();
  node->tables = std::move(tables);
  node->c = c;
  node->vc = std::move(vc);
  node->shape = c_in.shape();
  fk::autograd::record(node, {c_in}, out);
  fk::cuda::after_op(d.index);
  return out;
}

}  // namespace

fk::Tensor wave_device(const WaveOperator& op, const fk::Tensor& c) {
  fk::profile::OpScope scope("wave_device");
  FK_CHECK(c.device().is_cuda(), "nefi::WaveOperator", "a velocity on a CUDA device",
           c.device().str());
  if (c.dtype() == fk::DType::F32) return run_on_device<float>(op, c);
  return run_on_device<double>(op, c);
}

}  // namespace nefi
