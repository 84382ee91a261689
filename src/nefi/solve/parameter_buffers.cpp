#include "nefi/solve/parameter_buffers.h"

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/profile.h"

namespace nefi::detail {

std::vector<fk::Tensor> snapshot(const std::vector<fk::Tensor>& params) {
  fk::autograd::NoGradGuard ng;
  std::vector<fk::Tensor> s;
  for (const auto& p : params) s.push_back(p.detach().clone());
  return s;
}

void restore(std::vector<fk::Tensor>& params, const std::vector<fk::Tensor>& snap) {
  fk::autograd::NoGradGuard ng;
  for (size_t i = 0; i < params.size(); ++i) {
    fk::Tensor d = params[i].detach();
    d.copy_(snap[i]);
  }
}

void ema_update(std::vector<fk::Tensor>& shadow, const std::vector<fk::Tensor>& params,
                double decay) {
  for (size_t i = 0; i < params.size(); ++i) {
    fk::profile::OpScope scope("ema_update");
    const int64_t n = params[i].numel();
    if (params[i].dtype() == fk::DType::F64) {
      double* s = shadow[i].data<double>();
      const double* p = params[i].data<double>();
      for (int64_t j = 0; j < n; ++j) s[j] = decay * s[j] + (1 - decay) * p[j];
    } else {
      float* s = shadow[i].data<float>();
      const float* p = params[i].data<float>();
      const float d = static_cast<float>(decay);
      for (int64_t j = 0; j < n; ++j) s[j] = d * s[j] + (1 - d) * p[j];
    }
  }
}

std::vector<double> gather(const std::vector<fk::Tensor>& params, bool grads) {
  std::vector<double> out;
  for (const auto& p : params) {
    const fk::Tensor t = grads ? p.grad() : p;
    if (!t.defined()) {
      out.insert(out.end(), static_cast<size_t>(p.numel()), 0.0);
      continue;
    }
    const auto v = t.to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

void scatter(std::vector<fk::Tensor>& params, const std::vector<double>& x) {
  fk::autograd::NoGradGuard ng;
  size_t off = 0;
  for (auto& p : params) {
    const auto n = static_cast<size_t>(p.numel());
    std::vector<double> seg(x.begin() + off, x.begin() + off + n);
    fk::Tensor d = p.detach();
    d.copy_(fk::from_vector(seg, p.shape()));
    off += n;
  }
}

}  // namespace nefi::detail
