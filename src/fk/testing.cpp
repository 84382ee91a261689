#include "fk/testing.h"

#include <fmt/format.h>

#include <cmath>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/copy.h"

namespace fk::testing {
namespace {

// The output's real components as doubles: [Re y0, Im y0, Re y1, ...] for complex.
std::vector<double> flatten(const Tensor& y) {
  if (is_complex(y.dtype())) {
    std::vector<c128> v = y.detach().to_vector<c128>();
    std::vector<double> out;
    for (c128 z : v) {
      out.push_back(z.real());
      out.push_back(z.imag());
    }
    return out;
  }
  return y.detach().to_vector<double>();
}

// Adds `delta` to real component k of t (k indexes [Re, Im] pairs for complex).
void perturb(Tensor& t, int64_t k, double delta) {
  if (is_complex(t.dtype())) {
    c128* p = t.data<c128>();
    if (k % 2 == 0) {
      p[k / 2] += c128(delta, 0);
    } else {
      p[k / 2] += c128(0, delta);
    }
  } else {
    t.data<double>()[k] += delta;
  }
}

}  // namespace

std::string gradcheck(const TensorFn& fn, const std::vector<Tensor>& inputs, GradcheckOptions opt) {
  // The inputs marked requires_grad; none marked: every f64 or c128 one.
  bool any_marked = false;
  for (const Tensor& in : inputs) any_marked = any_marked || (in.defined() && in.requires_grad());
  std::vector<Tensor> xs;
  std::vector<size_t> diff_index;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& in = inputs[i];
    if (!in.defined()) {
      xs.push_back(in);
      continue;
    }
    DType dt = in.dtype();
    const bool checked = any_marked ? in.requires_grad() : (dt == DType::F64 || dt == DType::C128);
    if (checked) {
      if (dt != DType::F64 && dt != DType::C128) {
        return fmt::format("input {}: gradcheck needs f64 or c128 inputs, got {}", i, name(dt));
      }
      diff_index.push_back(i);
    }
    Tensor c = in.detach().contiguous().clone();
    if (checked) c.set_requires_grad(true);
    xs.push_back(c);
  }

  // A check of nothing passes whatever the gradient: name it instead.
  if (diff_index.empty()) return "gradcheck: no f64 or c128 input to check";
  Tensor y = fn(xs);
  std::vector<double> y0 = flatten(y);
  const int64_t n_out = static_cast<int64_t>(y0.size());
  const bool complex_out = is_complex(y.dtype());

  // Analytic: one backward per real output component.
  std::vector<std::vector<std::vector<double>>> analytic(diff_index.size());
  for (int64_t j = 0; j < n_out; ++j) {
    // Seeds are written on the host and moved to the output's device.
    Tensor seed;
    if (complex_out) {
      Tensor s128 = zeros(y.shape(), {DType::C128});
      s128.data<c128>()[j / 2] = j % 2 == 0 ? c128(1, 0) : c128(0, 1);
      seed = s128.to(y.dtype()).to(y.device());
    } else {
      Tensor s64 = zeros(y.shape(), {DType::F64});
      s64.data<double>()[j] = 1.0;
      seed = s64.to(y.dtype()).to(y.device());
    }
    std::vector<Tensor> req;
    for (size_t i : diff_index) req.push_back(xs[i]);
    std::vector<Tensor> g;
    if (y.requires_grad()) g = autograd::grad({y}, {seed}, req, /*retain_graph=*/true);
    for (size_t a = 0; a < diff_index.size(); ++a) {
      const Tensor& x = xs[diff_index[a]];
      std::vector<double> row;
      if (a < g.size() && g[a].defined()) {
        row = flatten(g[a].to(x.dtype()));
      } else {
        row.assign(static_cast<size_t>(x.numel() * (is_complex(x.dtype()) ? 2 : 1)), 0.0);
      }
      analytic[a].push_back(row);
    }
  }

  // Numerical: central differences per real input component.
  autograd::NoGradGuard ng;
  for (size_t a = 0; a < diff_index.size(); ++a) {
    const size_t i = diff_index[a];
    const Tensor x = xs[i];
    // Components are nudged through a host pointer: a CPU input in place, a
    // device input on a host copy that is moved back before each evaluation.
    const bool on_host = x.device().is_cpu();
    Tensor h = on_host ? x : x.to(kCPU).contiguous();
    auto evaluate = [&] {
      if (!on_host) xs[i] = h.to(x.device());
      return flatten(fn(xs));
    };
    int64_t n_in = x.numel() * (is_complex(x.dtype()) ? 2 : 1);
    for (int64_t k = 0; k < n_in; ++k) {
      perturb(h, k, opt.eps);
      std::vector<double> yp = evaluate();
      perturb(h, k, -2 * opt.eps);
      std::vector<double> ym = evaluate();
      perturb(h, k, opt.eps);
      for (int64_t j = 0; j < n_out; ++j) {
        double num = (yp[j] - ym[j]) / (2 * opt.eps);
        double ana = analytic[a][j][k];
        if (!(std::abs(ana - num) <= opt.atol + opt.rtol * std::abs(num))) {
          return fmt::format(
              "input {} component {}, output component {}: analytic {:.10g}, numerical {:.10g}", i,
              k, j, ana, num);
        }
      }
    }
    xs[i] = x;
  }
  return "";
}

}  // namespace fk::testing
