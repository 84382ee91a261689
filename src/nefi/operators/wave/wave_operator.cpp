#include "nefi/operators/wave/wave_operator.h"

#include <algorithm>
#include <cmath>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/operators/wave/wave_device.h"
#include "nefi/params.h"

namespace nefi {
namespace {

template <typename T>
struct WaveBackward : fk::autograd::Node {
  std::shared_ptr<const wave::ShotGeometry> geo;
  std::shared_ptr<const wave::StepCoefficients<T>> co;
  std::vector<double> c;  // the velocity the forward ran with
  fk::Dims shape;
  wave::TraceRecord record;
  fk::autograd::SavedTensor held;  // record.saved again, for accounting and release
  const char* name() const override { return "WaveBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(held);
  }
  // The trajectories or checkpoints go as soon as a backward without
  // retain_graph has used them.
  void release_saved() override {
    record.saved = fk::Tensor();
    Node::release_saved();
  }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    const fk::Tensor g = grads[0].to(fk::dtype_of<T>()).contiguous();
    const std::vector<double> kbar = wave::shot_kappa_gradient(*geo, *co, record, g);
    const auto cbar = wave::velocity_gradient(geo->grid, c, kbar);
    return {fk::from_vector(cbar, shape).to(fk::dtype_of<T>())};
  }
};

template <typename T>
fk::Tensor run_shots(const fk::Tensor& c_in, const std::shared_ptr<const wave::ShotGeometry>& geo,
                     const fk::Dims& shape, int64_t every) {
  const bool grad = fk::autograd::needs_grad(c_in);
  fk::autograd::NoGradGuard ng;
  std::vector<double> c = c_in.to_vector<double>();
  auto co = std::make_shared<const wave::StepCoefficients<T>>(
      wave::step_coefficients<T>(geo->grid, geo->damping, wave::padded_kappa(geo->grid, c)));
  if (!grad) return wave::shot_traces(*geo, *co, nullptr);
  auto node = std::make_shared<WaveBackward<T>>();
  node->record.every = every;
  fk::Tensor out = wave::shot_traces(*geo, *co, &node->record);
  node->held = node->record.saved;
  node->geo = geo;
  node->co = std::move(co);
  node->c = std::move(c);
  node->shape = shape;
  fk::autograd::record(node, {c_in}, out);
  return out;
}

}  // namespace

void check_velocity(const fk::Tensor& c, const fk::Dims& shape, double c_max,
                    const std::string& where) {
  FK_CHECK(c.shape() == shape, where, "a velocity of shape " + shape.str(), c.shape().str());
  FK_CHECK(c.dtype() == fk::DType::F32 || c.dtype() == fk::DType::F64, where,
           "a velocity of dtype f32 or f64", fk::name(c.dtype()));
  if (c.device().is_cuda()) return;  // wave_device checks the values on the device
  const std::vector<double> v = c.to_vector<double>();
  double lo = INFINITY, hi = -INFINITY, non_finite = 0;
  for (double x : v) {
    if (!std::isfinite(x)) {
      ++non_finite;
      continue;
    }
    lo = std::min(lo, x), hi = std::max(hi, x);
  }
  check_velocity_range(lo, hi, non_finite, c_max, where);
}

void check_velocity_range(double lo, double hi, double non_finite, double c_max,
                          const std::string& where) {
  FK_CHECK(non_finite == 0, where, "a finite velocity", "a non-finite value");
  FK_CHECK(lo > 0, where, "velocities > 0", "min c = " + Params::render(lo));
  FK_CHECK(hi <= c_max * (1 + 1e-9), where,
           "velocities <= c_max = " + Params::render(c_max) + " (the step is sized for it)",
           "max c = " + Params::render(hi));
}

WaveOperator::WaveOperator(WaveOperatorConfig cfg, fk::Dims shape)
    : cfg_(std::move(cfg)), shape_(shape) {
  FK_CHECK(!cfg_.sources.empty(), "wave sources", "at least one source", "none");
  FK_CHECK(cfg_.grad_mode == "full" || cfg_.grad_mode == "checkpoint", "wave config 'grad_mode'",
           "full or checkpoint", "'" + cfg_.grad_mode + "'");
  FK_CHECK(cfg_.checkpoint_every >= 0, "wave config 'checkpoint_every'", "steps >= 0 (0: auto)",
           fk::to_text(cfg_.checkpoint_every));
  geo_ = std::make_shared<const wave::ShotGeometry>(wave::make_shot_geometry(
      cfg_.wave, shape_, cfg_.sources, cfg_.receivers, cfg_.f0, cfg_.amplitude));
}

fk::Tensor WaveOperator::apply(const fk::Tensor& c) const {
  check_velocity(c, shape_, cfg_.wave.c_max, "wave operator");
  if (c.device().is_cuda()) return wave_device(*this, c);
  if (c.dtype() == fk::DType::F32) return run_shots<float>(c, geo_, shape_, checkpoint_every());
  return run_shots<double>(c, geo_, shape_, checkpoint_every());
}

std::shared_ptr<const wave::WaveDeviceTables> WaveOperator::tables_on(fk::Device device,
                                                                      fk::DType dtype) const {
  std::lock_guard<std::mutex> lock(device_cache_->mu);
  const std::string key = device.str() + "/" + fk::name(dtype);
  auto it = device_cache_->by_key.find(key);
  if (it != device_cache_->by_key.end()) return it->second;
  auto t = std::make_shared<const wave::WaveDeviceTables>(
      wave::upload_wave_tables(*geo_, device, dtype));
  device_cache_->by_key[key] = t;
  return t;
}

void WaveOperator::prepare_tables(fk::Device device, fk::DType dtype) const {
  if (device.is_cuda() && (dtype == fk::DType::F32 || dtype == fk::DType::F64))
    tables_on(device, dtype);
}

std::shared_ptr<Operator> WaveOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<WaveOperator>(cfg_, shape);
  op->primary = primary;
  return op;
}

fk::Dims WaveOperator::output_shape(const fk::Dims&) const {
  return {static_cast<int64_t>(cfg_.sources.size()), static_cast<int64_t>(cfg_.receivers.size()),
          cfg_.wave.n_t};
}

std::string WaveOperator::fidelity_tag() const {
  if (!cfg_.tag.empty()) return cfg_.tag;
  return "wave-leapfrog-o" + std::to_string(cfg_.wave.order) + "-" +
         wave::absorbing_name(cfg_.wave.absorbing);
}

int64_t WaveOperator::checkpoint_every() const {
  if (cfg_.grad_mode == "full") return 0;
  const int64_t n = geo_->grid.n_steps();
  return cfg_.checkpoint_every > 0 ? std::min(cfg_.checkpoint_every, std::max<int64_t>(n, 1))
                                   : wave::auto_checkpoint_every(n);
}

}  // namespace nefi
