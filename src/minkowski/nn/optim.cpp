#include "minkowski/nn/optim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/join.h"
#include "fk/ops/reduce.h"
#include "fk/ops/unary.h"
#include "fk/profile.h"
#include "minkowski/nn/checkpoint.h"
#include "minkowski/nn/optim_device.h"

namespace minkowski::nn {
namespace {

// Runs fn(p, g, i) over the elements of parameter p (in place, f32 or f64) and
// its gradient g (as doubles); fn returns the new value of p.
template <typename Fn>
void update(fk::Tensor& param, Fn&& fn) {
  FK_CHECK(param.is_contiguous(), "optimizer", "contiguous parameters", "a strided one");
  FK_CHECK(param.grad().device() == param.device(), "optimizer",
           "a gradient on the parameter's device " + param.device().str(),
           "one on " + param.grad().device().str());
  const std::vector<double> g = param.grad().to_vector<double>();
  if (param.dtype() == fk::DType::F64) {
    double* p = param.data<double>();
    for (size_t i = 0; i < g.size(); ++i) p[i] = fn(p[i], g[i], i);
  } else {
    float* p = param.data<float>();
    for (size_t i = 0; i < g.size(); ++i) p[i] = static_cast<float>(fn(p[i], g[i], i));
  }
  param.bump_version();
}

}  // namespace

Optimizer::Optimizer(std::vector<fk::Tensor> params, double lr)
    : params_(std::move(params)),
      lr_(lr),
      param_steps_(params_.size(), 0),
      buffers_(params_.size()) {
  FK_CHECK(std::isfinite(lr) && lr >= 0.0, "optimizer", "a finite learning rate >= 0",
           fk::to_text(lr));
  for (size_t i = 0; i < params_.size(); ++i) {
    const fk::DType t = params_[i].dtype();
    FK_CHECK(t == fk::DType::F32 || t == fk::DType::F64, "optimizer parameter " + fk::to_text(i),
             "f32 or f64", fk::name(t));
  }
}

void Optimizer::zero_grad() {
  for (auto& p : params_) p.set_grad(fk::Tensor());
}

fk::Tensor& Optimizer::buffer(size_t i, const char* name) {
  const auto names = buffer_names();
  auto& list = buffers_[i];
  const fk::Device device = params_[i].device();
  if (list.empty()) {
    for (size_t k = 0; k < names.size(); ++k) {
      list.push_back(fk::zeros(params_[i].shape(), {fk::DType::F64, device}));
    }
  }
  for (size_t k = 0; k < names.size(); ++k) {
    // the buffers follow their parameter (a module moved after a step)
    if (list[k].device() != device) list[k] = list[k].to(device);
    if (std::string(names[k]) == name) return list[k];
  }
  throw fk::Error("optimizer buffer", "one of this optimizer's", name);
}

void Optimizer::set_lr(double lr) {
  FK_CHECK(std::isfinite(lr) && lr >= 0, "Optimizer::set_lr", "a finite rate >= 0",
           fk::to_text(lr));
  lr_ = lr;
}

NamedTensors Optimizer::state() {
  NamedTensors out = live_state();
  for (auto& [name, t] : out) t = t.clone();
  return out;
}

NamedTensors Optimizer::live_state() {
  NamedTensors out;
  const auto names = buffer_names();
  for (size_t i = 0; i < params_.size(); ++i) {
    for (const char* n : names) out.emplace_back(std::to_string(i) + "." + n, buffer(i, n));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back(std::to_string(i) + ".step",
                     fk::full({}, static_cast<double>(param_steps_[i]), {fk::DType::I64}));
  }
  out.emplace_back("step", fk::full({}, static_cast<double>(steps_), {fk::DType::I64}));
  return out;
}

void Optimizer::load_state(const NamedTensors& state) {
  NamedTensors targets = live_state();
  // The counts are read into fresh scalars (live_state() made copies of them).
  std::vector<fk::Tensor> counts;
  for (size_t i = 0; i <= params_.size(); ++i) {
    counts.push_back(fk::zeros({}, {fk::DType::I64}));
    targets[targets.size() - 1 - params_.size() + i].second = counts.back();
  }
  NamedTensors source = state;
  const bool per_param = std::any_of(source.begin(), source.end(),
                                     [](const auto& e) { return e.first.ends_with(".step"); });
  if (!per_param) {  // written before per-parameter counts: each took every step
    const auto global =
        std::find_if(source.begin(), source.end(), [](const auto& e) { return e.first == "step"; });
    if (global != source.end()) {
      const fk::Tensor count = global->second;  // source grows below
      for (size_t i = 0; i < params_.size(); ++i)
        source.emplace_back(std::to_string(i) + ".step", count);
    }
  }
  copy_named(targets, source, "optimizer load_state");
  for (size_t i = 0; i < params_.size(); ++i)
    param_steps_[i] = static_cast<int64_t>(counts[i].item());
  steps_ = static_cast<int64_t>(counts.back().item());
}

Sgd::Sgd(std::vector<fk::Tensor> params, const SgdOptions& o)
    : Optimizer(std::move(params), o.lr), o_(o) {
  FK_CHECK(o.momentum >= 0.0 && o.weight_decay >= 0.0, "Sgd", "momentum and weight decay >= 0",
           fk::to_text(o.momentum) + ", " + fk::to_text(o.weight_decay));
  FK_CHECK(!o.nesterov || o.momentum > 0.0, "Sgd", "momentum > 0 with Nesterov",
           fk::to_text(o.momentum));
}

void Sgd::step() {
  const fk::profile::TraceScope trace("minkowski.sgd_step");
  ++steps_;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    ++param_steps_[i];
    if (params_[i].device().is_cuda()) {
      device_sgd_update(params_[i], o_.momentum > 0.0 ? buffer(i, "momentum") : fk::Tensor(),
                        {lr_, o_.momentum, o_.weight_decay, o_.nesterov});
      continue;
    }
    double* v = o_.momentum > 0.0 ? buffer(i, "momentum").data<double>() : nullptr;
    update(params_[i], [&](double p, double g, size_t k) {
      if (o_.weight_decay != 0.0) g += o_.weight_decay * p;
      if (v == nullptr) return p - lr_ * g;
      v[k] = o_.momentum * v[k] + g;  // zeros at first: v = g
      return p - lr_ * (o_.nesterov ? g + o_.momentum * v[k] : v[k]);
    });
  }
}

Adam::Adam(std::vector<fk::Tensor> params, const AdamOptions& o)
    : Optimizer(std::move(params), o.lr), o_(o) {
  FK_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1 && o.eps > 0, "Adam",
           "betas in [0, 1) and eps > 0",
           fk::to_text(o.beta1) + ", " + fk::to_text(o.beta2) + ", " + fk::to_text(o.eps));
  FK_CHECK(o.weight_decay >= 0.0, "Adam", "weight decay >= 0", fk::to_text(o.weight_decay));
}

void Adam::step() {
  const fk::profile::TraceScope trace("minkowski.adam_step");
  ++steps_;
  // Parameters on devices, updated together (a few launches in all) per step
  // count: one group unless some parameter missed steps.
  std::map<int64_t, std::vector<AdamOperands>> on_devices;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    const int64_t t = ++param_steps_[i];
    if (params_[i].device().is_cuda()) {
      on_devices[t].push_back({params_[i], buffer(i, "exp_avg"), buffer(i, "exp_avg_sq")});
      continue;
    }
    const double c1 = 1.0 - std::pow(o_.beta1, static_cast<double>(t));
    const double c2 = 1.0 - std::pow(o_.beta2, static_cast<double>(t));
    double* m = buffer(i, "exp_avg").data<double>();
    double* v = buffer(i, "exp_avg_sq").data<double>();
    update(params_[i], [&](double p, double g, size_t k) {
      if (o_.decoupled) {
        p *= 1.0 - lr_ * o_.weight_decay;
      } else if (o_.weight_decay != 0.0) {  // 0 * inf would be NaN
        g += o_.weight_decay * p;
      }
      m[k] = o_.beta1 * m[k] + (1.0 - o_.beta1) * g;
      v[k] = o_.beta2 * v[k] + (1.0 - o_.beta2) * g * g;
      return p - lr_ * (m[k] / c1) / (std::sqrt(v[k] / c2) + o_.eps);
    });
  }
  for (const auto& [t, operands] : on_devices) {
    const double c1 = 1.0 - std::pow(o_.beta1, static_cast<double>(t));
    const double c2 = 1.0 - std::pow(o_.beta2, static_cast<double>(t));
    device_adam_update(operands,
                       {lr_, o_.beta1, o_.beta2, o_.eps, o_.weight_decay, c1, c2, o_.decoupled});
  }
}

namespace {

// The sum of squares of every gradient: on the host in element order, or,
// for gradients on a CUDA device, per tensor by fk's device reductions (f64),
// summed on the device and read once.
double squared_norm(const std::vector<fk::Tensor>& params) {
  double total = 0.0;
  std::vector<fk::Tensor> device_sums;
  for (const auto& p : params) {
    const fk::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (g.device().is_cuda()) {
      const fk::Device first = device_sums.empty() ? g.device() : device_sums[0].device();
      device_sums.push_back(fk::sum(fk::square(g.detach().to(fk::DType::F64))).to(first));
      continue;
    }
    for (double v : g.to_vector<double>()) total += v * v;
  }
  if (!device_sums.empty()) total += fk::sum(fk::stack(device_sums, 0)).item();
  return total;
}

}  // namespace

double clip_grad_norm(const std::vector<fk::Tensor>& params, double max_norm) {
  // A negative bound flipped every gradient's sign, a NaN one turned clipping off.
  FK_CHECK(max_norm >= 0, "nn::clip_grad_norm", "max_norm >= 0", fk::to_text(max_norm));
  const double total = std::sqrt(squared_norm(params));
  if (std::isfinite(total) && total > max_norm) {
    const double scale = max_norm / (total + 1e-6);
    fk::autograd::NoGradGuard no_grad;
    for (const auto& p : params) {
      if (!p.grad().defined()) continue;
      p.set_grad(fk::mul(p.grad(), scale));
    }
  }
  return total;
}

}  // namespace minkowski::nn
