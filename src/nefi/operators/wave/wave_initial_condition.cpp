#include "nefi/operators/wave/wave_initial_condition.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <type_traits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/operators/wave/wave_initial_device.h"

namespace nefi {
namespace {

// Domain cells (C order) <-> the stored layout (zero in the layer and halo).
std::vector<double> embed(const wave::WaveGrid& g, const std::vector<double>& x) {
  std::vector<double> out(g.numel, 0.0);
  int64_t q = 0;
  for (int64_t i0 = 0; i0 < g.interior[0]; ++i0)
    for (int64_t i1 = 0; i1 < g.interior[1]; ++i1)
      for (int64_t i2 = 0; i2 < g.interior[2]; ++i2)
        out[g.at(i0 + g.pad[0], i1 + g.pad[1], i2 + g.pad[2])] = x[q++];
  return out;
}

std::vector<double> restrict_to_domain(const wave::WaveGrid& g, const std::vector<double>& x) {
  std::vector<double> out;
  out.reserve(g.interior[0] * g.interior[1] * g.interior[2]);
  for (int64_t i0 = 0; i0 < g.interior[0]; ++i0)
    for (int64_t i1 = 0; i1 < g.interior[1]; ++i1)
      for (int64_t i2 = 0; i2 < g.interior[2]; ++i2)
        out.push_back(x[g.at(i0 + g.pad[0], i1 + g.pad[1], i2 + g.pad[2])]);
  return out;
}

template <typename T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}
template <typename T>
std::vector<double> widen(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

struct InitialConditionBackward : fk::autograd::Node {
  std::shared_ptr<const WaveInitialConditionOperator> op;
  fk::DType dtype;
  fk::Dims shape;
  const char* name() const override { return "WaveInitialConditionBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>&) override {}
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    const auto g = grads[0].to_vector<double>();
    return {fk::from_vector(op->adjoint(g, dtype), shape).to(dtype)};
  }
};

}  // namespace

std::vector<double> gaussian_lowpass_weights(double dt_obs, double fc) {
  const double sigma = 1.0 / (2.0 * std::numbers::pi * fc);
  const int64_t half = static_cast<int64_t>(std::ceil(4.0 * sigma / dt_obs));
  std::vector<double> w(2 * half + 1);
  double sum = 0;
  for (int64_t j = -half; j <= half; ++j) {
    const double t = static_cast<double>(j) * dt_obs;
    sum += w[j + half] = std::exp(-t * t / (2 * sigma * sigma));
  }
  for (double& x : w) x /= sum;
  return w;
}

std::vector<double> gaussian_lowpass(const std::vector<double>& traces, int64_t n_t, double dt_obs,
                                     double fc) {
  const std::vector<double> w = gaussian_lowpass_weights(dt_obs, fc);
  const int64_t half = static_cast<int64_t>(w.size() / 2);
  std::vector<double> out(traces.size(), 0.0);
  const int64_t rows = static_cast<int64_t>(traces.size()) / n_t;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n_t; ++j) {
      double s = 0;
      for (int64_t i = std::max<int64_t>(0, j - half); i <= std::min(n_t - 1, j + half); ++i)
        s += w[i - j + half] * traces[r * n_t + i];
      out[r * n_t + j] = s;
    }
  return out;
}

WaveInitialConditionOperator::WaveInitialConditionOperator(WaveInitialConditionConfig cfg,
                                                           fk::Dims shape)
    : cfg_(std::move(cfg)), shape_(shape) {
  FK_CHECK(cfg_.sensor_fc >= 0 && std::isfinite(cfg_.sensor_fc), "wave config 'sensor_fc'",
           "a cut-off >= 0 (0: none)", fk::to_text(cfg_.sensor_fc));
  auto m = std::make_shared<Model>();
  // The same leapfrog step, every step a recorded sample (see the header).
  m->substeps = wave::make_wave_grid(cfg_.wave, shape_).substeps;
  wave::WaveConfig every_step = cfg_.wave;
  every_step.dt_obs = cfg_.wave.dt_obs / static_cast<double>(m->substeps);
  every_step.n_t = (cfg_.wave.n_t - 1) * m->substeps + 1;
  m->geo = wave::make_shot_geometry(every_step, shape_, {}, cfg_.receivers, 0.0, 1.0);
  FK_CHECK(m->geo.grid.substeps == 1, "wave_initial_condition", "one leapfrog step per sample",
           fk::to_text(m->geo.grid.substeps));
  m->kappa = wave::padded_kappa(m->geo.grid, std::vector<double>(shape_.numel(), cfg_.wave.c_max));
  m->co32 = wave::step_coefficients<float>(m->geo.grid, m->geo.damping, m->kappa);
  m->co64 = wave::step_coefficients<double>(m->geo.grid, m->geo.damping, m->kappa);
  model_ = std::move(m);
}

fk::Tensor WaveInitialConditionOperator::apply(const fk::Tensor& p0) const {
  FK_CHECK(p0.shape() == shape_, "wave_initial_condition", "p0 of shape " + shape_.str(),
           p0.shape().str());
  FK_CHECK(p0.dtype() == fk::DType::F32 || p0.dtype() == fk::DType::F64, "wave_initial_condition",
           "p0 of dtype f32 or f64", fk::name(p0.dtype()));
  if (p0.device().is_cuda()) return wave_initial_device(*this, p0);
  const bool grad = fk::autograd::needs_grad(p0);
  fk::autograd::NoGradGuard ng;
  const Model& m = *model_;
  const auto x = embed(m.geo.grid, p0.to_vector<double>());
  const std::vector<double> traces =
      sensor_samples(p0.dtype() == fk::DType::F32
                         ? widen(wave::initial_value_traces(m.geo, m.co32, m.kappa, cast<float>(x)))
                         : wave::initial_value_traces(m.geo, m.co64, m.kappa, x));
  const fk::Dims out_shape{static_cast<int64_t>(cfg_.receivers.size()), cfg_.wave.n_t};
  fk::Tensor out = fk::from_vector(traces, out_shape).to(p0.dtype());
  if (grad) {
    auto node = std::make_shared<InitialConditionBackward>();
    node->op = std::make_shared<WaveInitialConditionOperator>(*this);
    node->dtype = p0.dtype();
    node->shape = shape_;
    fk::autograd::record(node, {p0}, out);
  }
  return out;
}

std::vector<double> WaveInitialConditionOperator::adjoint(const std::vector<double>& g_in,
                                                          fk::DType precision) const {
  const int64_t expect = static_cast<int64_t>(cfg_.receivers.size()) * cfg_.wave.n_t;
  FK_CHECK(static_cast<int64_t>(g_in.size()) == expect, "wave_initial_condition adjoint",
           fk::to_text(expect) + " trace values", fk::to_text(g_in.size()));
  const std::vector<double> g = sensor_samples_adjoint(g_in);
  return precision == fk::DType::F32 ? adjoint_as<float>(g) : adjoint_as<double>(g);
}

std::vector<double> WaveInitialConditionOperator::sensor_samples(
    const std::vector<double>& every_step) const {
  const int64_t m = model_->substeps, n_fine = model_->geo.grid.n_t, n_t = cfg_.wave.n_t;
  const std::vector<double> h =
      cfg_.sensor_fc > 0 ? gaussian_lowpass(every_step, n_fine, model_->geo.grid.dt, cfg_.sensor_fc)
                         : every_step;
  std::vector<double> out(cfg_.receivers.size() * n_t);
  for (size_t r = 0; r < cfg_.receivers.size(); ++r)
    for (int64_t j = 0; j < n_t; ++j) out[r * n_t + j] = h[r * n_fine + j * m];
  return out;
}

std::vector<double> WaveInitialConditionOperator::sensor_samples_adjoint(
    const std::vector<double>& g) const {
  const int64_t m = model_->substeps, n_fine = model_->geo.grid.n_t, n_t = cfg_.wave.n_t;
  std::vector<double> up(cfg_.receivers.size() * n_fine, 0.0);
  for (size_t r = 0; r < cfg_.receivers.size(); ++r)
    for (int64_t j = 0; j < n_t; ++j) up[r * n_fine + j * m] = g[r * n_t + j];
  return cfg_.sensor_fc > 0 ? gaussian_lowpass(up, n_fine, model_->geo.grid.dt, cfg_.sensor_fc)
                            : up;
}

template <typename T>
std::vector<double> WaveInitialConditionOperator::adjoint_as(const std::vector<double>& g) const {
  const Model& m = *model_;
  const auto& co = [&]() -> const wave::StepCoefficients<T>& {
    if constexpr (std::is_same_v<T, float>)
      return m.co32;
    else
      return m.co64;
  }();
  return restrict_to_domain(m.geo.grid,
                            widen(wave::initial_value_adjoint(m.geo, co, m.kappa, cast<T>(g))));
}

std::vector<double> WaveInitialConditionOperator::time_reversal(
    const std::vector<double>& traces) const {
  const Model& m = *model_;
  const wave::WaveGrid& g = m.geo.grid;
  const int64_t n_t = cfg_.wave.n_t, n_rec = static_cast<int64_t>(cfg_.receivers.size());
  FK_CHECK(static_cast<int64_t>(traces.size()) == n_rec * n_t, "time_reversal",
           fk::to_text(n_rec * n_t) + " trace values", fk::to_text(traces.size()));
  std::vector<int64_t> cell(n_rec);
  for (int64_t r = 0; r < n_rec; ++r) {
    // The heaviest cell of the stencil; on a tie the later one, which for a
    // sensor on the domain's face is the domain's cell, not the layer's.
    const auto& s = m.geo.receivers[r];
    size_t best = 0;
    for (size_t i = 1; i < s.weight.size(); ++i)
      if (s.weight[i] >= s.weight[best]) best = i;
    cell[r] = s.index[best];
  }
  std::vector<double> buf[3];
  for (auto& b : buf) b.assign(g.numel, 0.0);
  std::array<std::vector<double>, 3> psi;
  std::array<double*, 3> psi_ptr{nullptr, nullptr, nullptr};
  for (int d = 0; d < 3; ++d)
    if (m.co64.pml && g.active[d]) psi[d].assign(g.numel, 0.0), psi_ptr[d] = psi[d].data();
  const int64_t N = g.n_steps();
  const double t_end = static_cast<double>(n_t - 1) * cfg_.wave.dt_obs;
  for (int64_t n = 0; n < N; ++n) {
    double* un = buf[(n + 2) % 3].data();
    wave::leapfrog_step(g, m.co64, buf[n % 3].data(), buf[(n + 1) % 3].data(), un, psi_ptr);
    // The trace at the reversed time, linear in the samples.
    const double s = std::clamp((t_end - static_cast<double>(n + 1) * g.dt) / cfg_.wave.dt_obs, 0.0,
                                static_cast<double>(n_t - 1));
    const int64_t j = std::min<int64_t>(static_cast<int64_t>(s), n_t - 2);
    const double f = s - static_cast<double>(j);
    for (int64_t r = 0; r < n_rec; ++r)
      un[cell[r]] = (1 - f) * traces[r * n_t + j] + f * traces[r * n_t + j + 1];
  }
  return restrict_to_domain(g, buf[(N + 1) % 3]);
}

namespace {

template <typename T>
void upload_known_coefficients(const wave::StepCoefficients<T>& co, const wave::WaveGrid& g,
                               const std::vector<double>& kappa, wave::WaveInitialDeviceTables& t) {
  const fk::Device d = t.base.device;
  auto upload = [&](const std::vector<T>& v) {
    return fk::from_vector(v, {static_cast<int64_t>(v.size())}).to(d);
  };
  t.k = upload(co.k);
  for (int a = 0; a < 3; ++a)
    if (co.pml && g.active[a]) t.beta[a] = upload(co.beta[a]);
  // add_scaled_laplacian's k: scale κ rounded to T once, scale = ½ dt².
  const double dt2 = g.dt * g.dt;
  std::vector<T> start(g.numel);
  for (int64_t p = 0; p < g.numel; ++p) start[p] = static_cast<T>(0.5 * dt2 * kappa[p]);
  t.start_k = upload(start);
}

}  // namespace

void WaveInitialConditionOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda() && (dtype == fk::DType::F32 || dtype == fk::DType::F64))
    tables_on(device, dtype);
}

std::shared_ptr<const wave::WaveInitialDeviceTables> WaveInitialConditionOperator::tables_on(
    fk::Device device, fk::DType dtype) const {
  std::lock_guard<std::mutex> lock(device_cache_->mu);
  const std::string key = device.str() + "/" + fk::name(dtype);
  auto it = device_cache_->by_key.find(key);
  if (it != device_cache_->by_key.end()) return it->second;
  const Model& m = *model_;
  auto t = std::make_shared<wave::WaveInitialDeviceTables>();
  t->base = wave::upload_wave_tables(m.geo, device, dtype);
  if (dtype == fk::DType::F32)
    upload_known_coefficients(m.co32, m.geo.grid, m.kappa, *t);
  else
    upload_known_coefficients(m.co64, m.geo.grid, m.kappa, *t);
  if (cfg_.sensor_fc > 0) {
    const std::vector<double> w = gaussian_lowpass_weights(m.geo.grid.dt, cfg_.sensor_fc);
    t->half = static_cast<int64_t>(w.size() / 2);
    t->lowpass = fk::from_vector(w, {static_cast<int64_t>(w.size())}).to(device);
  }
  device_cache_->by_key[key] = t;
  return t;
}

std::shared_ptr<Operator> WaveInitialConditionOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<WaveInitialConditionOperator>(cfg_, shape);
  op->primary = primary;
  return op;
}

fk::Dims WaveInitialConditionOperator::output_shape(const fk::Dims&) const {
  return {static_cast<int64_t>(cfg_.receivers.size()), cfg_.wave.n_t};
}

std::string WaveInitialConditionOperator::fidelity_tag() const {
  if (!cfg_.tag.empty()) return cfg_.tag;
  return "wave-ic-o" + std::to_string(cfg_.wave.order) + "-" +
         wave::absorbing_name(cfg_.wave.absorbing);
}

}  // namespace nefi
