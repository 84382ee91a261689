#include "fit_operators.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <sstream>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/npy.h"
#include "fk/ops/join.h"
#include "fk/ops/view.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/operators/advection_diffusion.h"
#include "nefi/operators/fft_convolution.h"
#include "nefi/operators/intensity.h"
#include "nefi/operators/radon.h"
#include "nefi/operators/sampling.h"

namespace nefi::cli {
namespace {

// The kinds builtin_model makes.
const std::vector<std::string> kKinds{"sampling",        "fourier_sampling",   "downsample",
                                      "phase_retrieval", "beer_lambert",       "gaussian_blur",
                                      "radon",           "advection_diffusion"};
const char* const kKindList =
    "sampling, fourier_sampling, downsample, phase_retrieval, beer_lambert, gaussian_blur, "
    "radon or advection_diffusion";

// "a,b,c" as its comma-separated parts (none empty).
std::vector<std::string> split(const std::string& s, const char* flag) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) parts.push_back(part);
  FK_CHECK(!s.empty() && s.back() != ',' && !parts.empty(), flag, "values separated by commas",
           "'" + s + "'");
  for (const std::string& p : parts)
    FK_CHECK(!p.empty(), flag, "values separated by commas", "'" + s + "'");
  return parts;
}

// A finite number, or nothing when `text` is not one.
std::optional<double> finite_number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

// advection_diffusion: --times, --velocity (a number or an .npy per axis),
// --diffusivity, --boundary, --unknown (with diffusivity or velocity:
// --release and --release-is), the sensors as --pattern. The velocity
// unknown's field is (axes, *grid): the grid is the shape's last axes.
OperatorPtr advection_diffusion(const OperatorRequest& r, const fk::Dims& shape) {
  AdvectionDiffusionOptions o;
  o.unknown = parse_transport_unknown(r.unknown);
  const bool by_coefficient =
      o.unknown == TransportUnknown::kDiffusivity || o.unknown == TransportUnknown::kVelocity;
  fk::Dims grid = shape;
  if (o.unknown == TransportUnknown::kVelocity) {
    FK_CHECK(shape.size() >= 2 && shape[0] == shape.size() - 1, "--shape",
             "the velocity's shape: its axis count, then the grid (e.g. 2,32,32)", shape.str());
    grid = fk::Dims(shape.data() + 1, shape.size() - 1);
  }
  FK_CHECK(!r.times.empty(), "--times", "the observation times for advection_diffusion", "none");
  o.times.clear();
  for (const std::string& t : split(r.times, "--times")) {
    const auto v = finite_number(t);
    FK_CHECK(v.has_value(), "--times", "numbers separated by commas", "'" + r.times + "'");
    o.times.push_back(*v);
  }
  if (!r.velocity.empty())
    for (const std::string& v : split(r.velocity, "--velocity")) {
      const auto value = finite_number(v);
      FK_CHECK(value || v.ends_with(".npy"), "--velocity",
               "a finite number or an .npy file per axis", "'" + v + "'");
      // A file as read: the operator refuses a complex one by name.
      o.velocity.push_back(value ? fk::full({1}, *value, {fk::DType::F64}) : fk::read_npy(v));
    }
  o.diffusivity = r.diffusivity;
  o.boundary.clear();
  for (const std::string& b : split(r.boundary, "--boundary"))
    o.boundary.push_back(parse_transport_boundary(b));
  FK_CHECK(r.release.empty() || by_coefficient, "--release", "--unknown diffusivity or velocity",
           "--unknown " + r.unknown);
  if (!r.release.empty()) o.release = fk::read_npy(r.release);
  FK_CHECK(r.release_is == "initial" || r.release_is == "source", "--release-is",
           "initial or source", "'" + r.release_is + "'");
  FK_CHECK(r.release_is == "initial" || by_coefficient, "--release-is",
           "--unknown diffusivity or velocity", "--unknown " + r.unknown);
  o.release_is_source = r.release_is == "source";
  o.scheme = parse_transport_scheme(r.scheme);
  if (!r.pattern.empty()) o.sensors = read_real_npy(r.pattern, "--pattern");
  o.courant = r.courant;
  try {  // the operator's checks, named by the command's option set
    return std::make_shared<AdvectionDiffusionOperator>(isotropic_domain(grid), o);
  } catch (const fk::Error& e) {
    throw fk::Error("--operator advection_diffusion", e.expected(), e.given());
  }
}

}  // namespace

void add_operator_options(CLI::App* sub, OperatorRequest& r) {
  sub->add_option("--operator", r.kind,
                  "a built-in forward model instead: sampling | fourier_sampling | downsample | "
                  "phase_retrieval | beer_lambert | gaussian_blur | radon | advection_diffusion");
  r.kind_options.push_back(
      {sub->add_option(
           "--pattern", r.pattern,
           "sampling / fourier_sampling: the mask .npy (the field's shape; k-space in "
           "numpy.fft order, DC first); advection_diffusion: the sensors (observed > 0)"),
       {"sampling", "fourier_sampling", "advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_flag("--centered", r.centered,
                     "fourier_sampling: the mask has DC in the middle (the data stay in "
                     "numpy.fft order: fftn(x)[ifftshift(mask) > 0])"),
       {"fourier_sampling"}});
  r.kind_options.push_back(
      {sub->add_option("--factors", r.factors, "downsample: cells per block, e.g. 2,2 (default 2)"),
       {"downsample"}});
  r.kind_options.push_back(
      {sub->add_option("--oversample", r.oversample, "phase_retrieval: padded over field grid (2)"),
       {"phase_retrieval"}});
  r.kind_options.push_back(
      {sub->add_option("--axis", r.axis, "beer_lambert: the axis the rays run along (0)"),
       {"beer_lambert"}});
  r.kind_options.push_back(
      {sub->add_option("--i0", r.i0, "beer_lambert: the unattenuated intensity (1)"),
       {"beer_lambert"}});
  r.kind_options.push_back(
      {sub->add_option("--sigma", r.sigma, "gaussian_blur: the blur's std in cells"),
       {"gaussian_blur"}});
  r.kind_options.push_back(
      {sub->add_flag("--periodic", r.periodic, "gaussian_blur: circular, not zero-padded"),
       {"gaussian_blur"}});
  r.kind_options.push_back(
      {sub->add_option("--views", r.views, "radon: projection angles over 180 degrees (16)"),
       {"radon"}});
  r.kind_options.push_back(
      {sub->add_option("--times", r.times,
                       "advection_diffusion: observation times, e.g. 0.1,0.2,0.3"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option("--velocity", r.velocity,
                       "advection_diffusion: the flow, one number (uniform) or .npy (per cell) per "
                       "axis, e.g. 0.5,0 or u.npy,w.npy (default none)"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option("--diffusivity", r.diffusivity, "advection_diffusion: D >= 0 (default 0)"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option(
           "--boundary", r.boundary,
           "advection_diffusion: closed | open | periodic, one or one per axis (closed)"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option("--courant", r.courant,
                       "advection_diffusion: each substep's share of the stability bound, (0, 1] "
                       "(0.9)"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option(
           "--scheme", r.scheme,
           "advection_diffusion: lax_wendroff (accurate; wiggles at sharp fronts; with D "
           "near 0 in a converging or reversing flow use upwind) | upwind (monotone, "
           "first order) (lax_wendroff)"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option(
           "--unknown", r.unknown,
           "advection_diffusion: the field is the initial release, a source rate, the "
           "diffusivity map, or the velocity (--shape axes,*grid), the last two with the "
           "release given (initial | source | diffusivity | velocity)"),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option("--release", r.release,
                       "advection_diffusion --unknown diffusivity or velocity: the known release "
                       "(.npy, the grid's shape); give the fit a bounded prior, e.g. \"bounded(0, "
                       "0.02) + tv\""),
       {"advection_diffusion"}});
  r.kind_options.push_back(
      {sub->add_option("--release-is", r.release_is,
                       "advection_diffusion --unknown diffusivity or velocity: the release is the "
                       "initial concentration or a source rate (initial | source)"),
       {"advection_diffusion"}});
}

void check_operator_options(const OperatorRequest& r) {
  // A typo in the kind is the kind's error, before its options' or the grid's.
  FK_CHECK(r.kind.empty() || std::find(kKinds.begin(), kKinds.end(), r.kind) != kKinds.end(),
           "--operator", kKindList, "'" + r.kind + "'");
  for (const auto& [option, kinds] : r.kind_options) {
    if (option->count() == 0 || std::find(kinds.begin(), kinds.end(), r.kind) != kinds.end())
      continue;
    std::string names;
    for (const std::string& k : kinds) names += (names.empty() ? "" : ", ") + k;
    throw fk::Error(
        option->get_name(), "an option of --operator " + names,
        "it with " + (r.kind.empty() ? std::string("--matrix") : "--operator " + r.kind));
  }
}

std::vector<int64_t> parse_list(const std::string& s, const char* flag) {
  std::vector<int64_t> v;
  std::stringstream in(s);
  std::string part;
  // "6," ends in an empty part getline never returns: refused here.
  FK_CHECK(!s.empty() && s.back() != ',', flag, "1 to 3 positive integers separated by commas",
           "'" + s + "'");
  while (std::getline(in, part, ',')) {
    char* end = nullptr;
    errno = 0;
    const long e = std::strtol(part.c_str(), &end, 10);
    FK_CHECK(!part.empty() && *end == '\0' && e >= 1 && errno == 0 && e <= (int64_t{1} << 31), flag,
             "1 to 3 positive integers (each up to 2^31) separated by commas", "'" + s + "'");
    v.push_back(e);
  }
  FK_CHECK(v.size() >= 1 && v.size() <= 3, flag, "1 to 3 axes", "'" + s + "'");
  return v;
}

fk::Dims field_shape(const std::string& s, const fk::Dims& implied, const std::string& model) {
  if (!s.empty()) return fk::Dims(parse_list(s, "--shape"));
  FK_CHECK(!implied.empty(), "--shape", "the field's grid (" + model + " does not imply one)",
           "none");
  return implied;
}

fk::Tensor read_real_npy(const std::string& path, const char* flag) {
  fk::Tensor t = fk::read_npy(path);
  FK_CHECK(!fk::is_complex(t.dtype()), flag, "real values",
           std::string(fk::name(t.dtype())) + " in " + path);
  return t;
}

Model builtin_model(const OperatorRequest& r, const std::string& shape_text, Measurement& m) {
  const std::string& k = r.kind;
  if (k == "sampling" || k == "fourier_sampling") {
    FK_CHECK(!r.pattern.empty(), "--pattern", "a mask .npy for --operator " + k, "none");
    fk::Tensor mask = read_real_npy(r.pattern, "--pattern").to(fk::DType::F64);
    if (r.centered) {  // DC in the middle (fftshift's order) -> numpy.fft order
      std::vector<int64_t> shifts, dims;
      for (int a = 0; a < mask.dim(); ++a) {
        shifts.push_back(-(mask.size(a) / 2));
        dims.push_back(a);
      }
      mask = fk::roll(mask, shifts, dims).contiguous();
    }
    Model out;
    if (k == "sampling") {
      out.op = std::make_shared<SamplingOperator>(mask);
    } else {
      out.op = std::make_shared<FourierSamplingOperator>(mask);
      if (fk::is_complex(m.data.dtype()))
        m.data = fk::stack({fk::real(m.data), fk::imag(m.data)}, 0).to(fk::DType::F64);
    }
    out.shape = field_shape(shape_text, mask.shape(), "--operator " + k);
    return out;
  }
  const fk::Dims shape = field_shape(shape_text, {}, "--operator " + k);
  if (k == "advection_diffusion") return {advection_diffusion(r, shape), shape};
  if (k == "downsample") {
    std::vector<int64_t> f = r.factors.empty() ? std::vector<int64_t>(shape.size(), 2)
                                               : parse_list(r.factors, "--factors");
    return {std::make_shared<DownsampleOperator>(f), shape};
  }
  if (k == "phase_retrieval")
    return {std::make_shared<PhaseRetrievalOperator>(shape.size(), r.oversample), shape};
  if (k == "gaussian_blur") {
    FK_CHECK(std::isfinite(r.sigma) && r.sigma > 0, "--sigma", "the blur's std: finite, > 0 cells",
             fk::to_text(r.sigma));
    const Domain d = isotropic_domain(shape);
    return {std::make_shared<FFTConvolution>(gaussian_psf(r.sigma * d.spacing()[0]), d, r.periodic),
            shape};
  }
  if (k == "radon") {
    FK_CHECK(r.views >= 1, "--views", "at least one projection angle", fk::to_text(r.views));
    FK_CHECK(shape.size() >= 2 && shape[0] == shape[1], "--shape",
             "a grid square in its first two axes for radon (n,n or n,n,nz)", shape.str());
    RadonGeometry g;
    g.n_views = r.views;
    return {std::make_shared<RadonOperator>(isotropic_domain(shape), g), shape};
  }
  if (k == "beer_lambert") {
    FK_CHECK(r.axis >= 0 && r.axis < shape.size(), "--axis",
             "an axis of the " + fk::to_text(shape.size()) + "-D field", fk::to_text(r.axis));
    // A cell's path length on from_forward's domain (longest axis 1).
    const double length = isotropic_domain(shape).spacing()[r.axis];
    return {std::make_shared<BeerLambertOperator>(
                std::make_shared<AxisIntegralOperator>(shape, r.axis, length), r.i0),
            shape};
  }
  throw fk::Error("--operator", kKindList, "'" + k + "'");
}

}  // namespace nefi::cli
