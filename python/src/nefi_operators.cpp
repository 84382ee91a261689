// The built-in operators for Python: factories, and forward / vjp on numpy
// f64 arrays (a batch in leading dims where the operator is batchable), so
// a user can simulate data, check an adjoint, or read a zero-filled
// inverse with the very operator the solve uses.
#include "nefi_operators.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/byop/noise_estimate.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/composite.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/intensity.h"
#include "nefi/operators/radon.h"
#include "nefi/operators/sampling.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

fk::Tensor f64(const nb::ndarray<nb::ro>& a) {
  return from_dlpack(a).to(fk::DType::F64).contiguous();
}

nb::object forward(const NativeOperator& o, nb::ndarray<nb::ro> x) {
  const fk::Tensor in = f64(x);
  fk::Tensor y;
  {
    nb::gil_scoped_release nogil;
    fk::autograd::NoGradGuard ng;
    y = o.op->apply(in);
  }
  return to_numpy(y);
}

nb::object vjp(const NativeOperator& o, nb::ndarray<nb::ro> x, nb::ndarray<nb::ro> g) {
  const fk::Tensor in = f64(x), dy = f64(g);
  fk::Tensor dx;
  {
    nb::gil_scoped_release nogil;
    dx = o.op->vjp(in, dy);
  }
  // An operator whose output does not depend on the field (a soft PINN's
  // field only sets the grid) has no gradient there: zeros.
  if (!dx.defined()) dx = fk::zeros(in.shape(), {in.dtype()});
  return to_numpy(dx);
}

NativeOperator held(nefi::OperatorPtr op) {
  return NativeOperator{std::move(op)};
}

// from_forward's domain for a grid, its size checked.
nefi::Domain isotropic(const std::vector<int64_t>& shape) {
  FK_CHECK(!shape.empty() && shape.size() <= 3, "nefi.operators", "a grid of 1-3 axes",
           std::to_string(shape.size()) + " axes");
  for (int64_t n : shape)
    FK_CHECK(n >= 1, "nefi.operators", "a grid of positive sizes", std::to_string(n));
  return nefi::isotropic_domain(fk::Dims(shape));
}

}  // namespace

void bind_nefi_operators(nb::module_& m) {
  nb::class_<NativeOperator>(m, "Operator")
      .def_prop_ro("kind", [](const NativeOperator& o) { return o.op->kind(); })
      .def_prop_ro("homogeneity", [](const NativeOperator& o) { return o.op->homogeneity(); })
      .def_prop_ro("linear", [](const NativeOperator& o) { return o.op->linear(); })
      .def_prop_ro("batchable", [](const NativeOperator& o) { return o.op->batchable(); })
      .def("output_shape",
           [](const NativeOperator& o, const std::vector<int64_t>& shape) {
             return o.op->output_shape(fk::Dims(shape)).vec();
           })
      .def("forward", &forward, nb::arg("x"))
      .def("vjp", &vjp, nb::arg("x"), nb::arg("g"))
      .def(
          "estimate_noise",
          [](const NativeOperator& o, nb::ndarray<nb::ro> y) {
            const auto e = nefi::sampled_noise(*o.op, f64(y));
            if (!e)
              throw fk::Error("Operator.estimate_noise", "a sampling or fourier_sampling operator",
                              o.op->kind());
            return e->sigma;
          },
          nb::arg("y"));
  m.def(
      "estimate_noise",
      [](nb::ndarray<nb::ro> y, std::optional<nb::ndarray<nb::ro>> mask) {
        return nefi::estimate_noise(f64(y), mask ? f64(*mask) : fk::Tensor()).sigma;
      },
      nb::arg("y"), nb::arg("mask") = nb::none());
  m.def(
      "sampling_operator",
      [](nb::ndarray<nb::ro> mask) {
        return held(std::make_shared<nefi::SamplingOperator>(f64(mask)));
      },
      nb::arg("mask"));
  m.def(
      "fourier_sampling_operator",
      [](nb::ndarray<nb::ro> mask) {
        return held(std::make_shared<nefi::FourierSamplingOperator>(f64(mask)));
      },
      nb::arg("mask"));
  m.def(
      "downsample_operator",
      [](const std::vector<int64_t>& factors) {
        return held(std::make_shared<nefi::DownsampleOperator>(factors));
      },
      nb::arg("factors"));
  m.def(
      "phase_retrieval_operator",
      [](int rank, double oversample) {
        return held(std::make_shared<nefi::PhaseRetrievalOperator>(rank, oversample));
      },
      nb::arg("rank"), nb::arg("oversample"));
  m.def(
      "axis_integral_operator",
      [](const std::vector<int64_t>& shape, int axis, double length) {
        return held(std::make_shared<nefi::AxisIntegralOperator>(fk::Dims(shape), axis, length));
      },
      nb::arg("shape"), nb::arg("axis"), nb::arg("length"));
  m.def(
      "blur_operator",
      [](const std::vector<int64_t>& shape, double sigma_cells, bool periodic) {
        const nefi::Domain d = isotropic(shape);
        FK_CHECK(sigma_cells > 0, "nefi.operators.gaussian_blur", "sigma > 0 cells",
                 std::to_string(sigma_cells));
        return held(std::make_shared<nefi::FFTConvolution>(
            nefi::gaussian_psf(sigma_cells * d.spacing()[0]), d, periodic));
      },
      nb::arg("shape"), nb::arg("sigma"), nb::arg("periodic"));
  m.def(
      "radon_operator",
      [](const std::vector<int64_t>& shape, int64_t n_views, double angle_range,
         int64_t det_per_pixel) {
        nefi::RadonGeometry g;
        g.n_views = n_views;
        g.angle_range = angle_range;
        g.det_per_pixel = det_per_pixel;
        return held(std::make_shared<nefi::RadonOperator>(isotropic(shape), g));
      },
      nb::arg("shape"), nb::arg("n_views"), nb::arg("angle_range"), nb::arg("det_per_pixel"));
  m.def(
      "stack_operator",
      [](const std::vector<const NativeOperator*>& parts, const std::vector<int64_t>& shape) {
        std::vector<nefi::OperatorPtr> ops;
        for (const NativeOperator* p : parts) ops.push_back(p->op);
        return held(std::make_shared<nefi::StackOperator>(ops, fk::Dims(shape)));
      },
      nb::arg("parts"), nb::arg("shape"));
  m.def(
      "advection_diffusion_operator",
      [](const std::vector<int64_t>& shape, const std::vector<double>& times,
         const std::vector<nb::ndarray<nb::ro>>& velocity, double diffusivity,
         const std::string& unknown, const std::vector<std::string>& boundary,
         std::optional<nb::ndarray<nb::ro>> sensors, double courant, const std::string& scheme,
         std::optional<nb::ndarray<nb::ro>> release, bool release_is_source) {
        nefi::AdvectionDiffusionOptions o;
        for (const auto& v : velocity) o.velocity.push_back(f64(v));
        o.diffusivity = diffusivity;
        o.times = times;
        o.unknown = nefi::parse_transport_unknown(unknown);
        o.boundary.clear();
        for (const std::string& b : boundary)
          o.boundary.push_back(nefi::parse_transport_boundary(b));
        if (sensors) o.sensors = f64(*sensors);
        o.courant = courant;
        o.scheme = nefi::parse_transport_scheme(scheme);
        if (release) o.release = f64(*release);
        o.release_is_source = release_is_source;
        return held(std::make_shared<nefi::AdvectionDiffusionOperator>(isotropic(shape), o));
      },
      nb::arg("shape"), nb::arg("times"), nb::arg("velocity"), nb::arg("diffusivity"),
      nb::arg("unknown"), nb::arg("boundary"), nb::arg("sensors").none(), nb::arg("courant"),
      nb::arg("scheme"), nb::arg("release").none() = nb::none(),
      nb::arg("release_is_source") = false);
  m.def(
      "beer_lambert_operator",
      [](const NativeOperator& path, double i0) {
        return held(std::make_shared<nefi::BeerLambertOperator>(path.op, i0));
      },
      nb::arg("path"), nb::arg("i0"));
}

}  // namespace fkpy
