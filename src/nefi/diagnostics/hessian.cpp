#include "nefi/diagnostics/hessian.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/operators/operator.h"

namespace nefi::diagnostics {
namespace {

void set_parameters(fk::Tensor& flat, const Vec& theta) {
  {
    fk::autograd::NoGradGuard ng;
    flat.copy_(fk::from_vector(theta, flat.shape()).to(flat.dtype()));
  }
  flat.bump_version();
  flat.set_grad(fk::Tensor());
}

// The loss gradient at flat parameters theta (written into the field), on
// the field's device; obs on it too.
Vec gradient(const InverseProblem& p, const Measurement& obs, fk::Tensor& flat, const Vec& theta) {
  set_parameters(flat, theta);
  FieldMap fields = p.field->forward(p.domain, 1.0);
  const fk::Tensor pred = p.op->forward(fields);
  const LossContext ctx{&fields, pred, &obs, &p.domain, p.op.get(), 0, 0, 1.0};
  const LossSet::Value v = p.losses.forward(ctx);
  v.total.backward();
  for (const fk::Tensor& m : p.op->parameters()) m.set_grad(fk::Tensor());  // not piled up
  const fk::Tensor g = flat.grad();
  FK_CHECK(g.defined(), "nefi::diagnostics::hessian_spectrum",
           "a loss that depends on the field's parameters", "no gradient");
  Vec out = g.to(fk::kCPU).to(fk::DType::F64).to_vector<double>();
  for (double x : out)
    FK_CHECK(std::isfinite(x), "nefi::diagnostics::hessian_spectrum",
             "a finite loss gradient near the parameters (a Hessian-vector product's step)",
             "a non-finite one");
  return out;
}

// The field and the operator's trainable parameters on `device` while it
// lives, back on the CPU after (as a device solve leaves them).
struct OnDevice {
  const InverseProblem& p;
  fk::Device device;
  OnDevice(const InverseProblem& problem, fk::Device d) : p(problem), device(d) {
    if (!device.is_cuda()) return;
    try {
      p.field->to(device);
      p.op->parameters_to(device);
    } catch (...) {
      back();
      throw;
    }
  }
  ~OnDevice() {
    if (device.is_cuda()) back();
  }
  // Both back on the CPU; a broken device leaves the first error.
  void back() noexcept {
    try {
      p.field->to(fk::kCPU);
    } catch (...) {
    }
    try {
      p.op->parameters_to(fk::kCPU);
    } catch (...) {
    }
  }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
};

}  // namespace

HessianSpectrum hessian_spectrum(const InverseProblem& problem, int k, int n_iter, uint64_t seed,
                                 fk::Device device) {
  FK_CHECK(problem.field && problem.op, "nefi::diagnostics::hessian_spectrum",
           "a problem with a field and an operator", "none");
  FK_CHECK(k >= 1 && k <= 1000, "hessian_spectrum k", "eigenvalues per end in [1, 1000]",
           fk::to_text(k));
  FK_CHECK(n_iter >= k && n_iter <= 1000, "hessian_spectrum n_iter",
           "Lanczos steps in [k, 1000] (k = " + fk::to_text(k) + ")", fk::to_text(n_iter));
  // The products difference two gradients a step of about 1e-3 apart: a
  // half-precision trunk's rounding (bf16: 4e-3 relative) swamps that (toy1d's
  // bf16 eigenvalues were 5-7 % off, its Hessian visibly asymmetric).
  if (const auto ac = problem.field->autocast())
    throw fk::Error("nefi::diagnostics::hessian_spectrum",
                    "a field without autocast (half-precision gradients are too coarse for its "
                    "finite-difference products: set autocast=none to diagnose the model)",
                    std::string("autocast ") + fk::name(*ac));
  constexpr const char* kDevice = "hessian_spectrum device";
  if (device.is_cuda()) {
    fk::check_usable(device, kDevice);
    FK_CHECK(problem.field->has_device_path(), kDevice, "a field with a device path",
             "a " + problem.field->kind() + " field");
    const std::string refusal = device_solve_refusal(*problem.op, device);
    FK_CHECK(refusal.empty(), kDevice, "an operator with a device path", refusal);
  }
  // The observations at the operator's output grid, checked on the host as a
  // solve checks them (a device loss reads nothing back to refuse them),
  // then on the device once.
  Measurement obs = problem.measurement;
  const fk::Dims out_shape = problem.op->output_shape(problem.domain.shape());
  if (!(obs.data.shape() == out_shape)) obs = obs.resampled(out_shape);
  problem.losses.check_observations(obs, "nefi::diagnostics::hessian_spectrum");
  const Vec theta =
      problem.field->params().flat().to(fk::kCPU).to(fk::DType::F64).to_vector<double>();
  const OnDevice on(problem, device);
  fk::Tensor& flat = problem.field->params().flat();
  if (device.is_cuda()) {
    problem.op->prepare_tables(device, flat.dtype());
    obs.data = obs.data.to(device);
    if (obs.mask.defined()) obs.mask = obs.mask.to(device);
  }
  double theta_max = 0;
  for (double t : theta) theta_max = std::max(theta_max, std::abs(t));
  SymmetricMap H;
  H.n = static_cast<int64_t>(theta.size());
  H.apply = [&](const Vec& v) {
    double v_max = 0;
    for (double x : v) v_max = std::max(v_max, std::abs(x));
    const double h = v_max > 0 ? 1e-3 * (1 + theta_max) / v_max : 1.0;
    Vec plus = theta, minus = theta;
    for (size_t i = 0; i < v.size(); ++i) plus[i] += h * v[i], minus[i] -= h * v[i];
    const Vec gp = gradient(problem, obs, flat, plus), gm = gradient(problem, obs, flat, minus);
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = (gp[i] - gm[i]) / (2 * h);
    return out;
  };
  HessianSpectrum s;
  s.parameters = H.n;
  try {
    s.eigenvalues = extreme_eigenvalues(H, k, n_iter, seed);
  } catch (...) {
    try {  // the parameters back as they were; a broken device leaves the first error
      set_parameters(flat, theta);
    } catch (...) {
    }
    throw;
  }
  set_parameters(flat, theta);
  // A smallest value within the products' error of 0 (1e-4 of the largest)
  // is unresolved, not a curvature: its ratio was reported as a condition
  // (3.8e6 from 1.6e-5 against 61).
  constexpr double kResolved = 1e-4;
  const double top = s.eigenvalues.largest.front(), low = s.eigenvalues.smallest.front();
  s.condition =
      low > kResolved * std::abs(top) ? top / low : std::numeric_limits<double>::infinity();
  return s;
}

}  // namespace nefi::diagnostics
