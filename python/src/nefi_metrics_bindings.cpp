// fieldkit._core.nefi.metrics: the metrics nefi's instances report
// (solve/metrics.h, solve/localization.h, thermal/metrics.h) on arrays of
// the caller's, so a score computed outside a run is the score a run writes.
// fieldkit.nefi.metrics wraps them (argument checks, numpy in).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <optional>
#include <utility>
#include <vector>

#include "fk/error.h"
#include "nefi/instances/thermal/metrics.h"
#include "nefi/solve/localization.h"
#include "nefi/solve/metrics.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

using Array = nb::ndarray<nb::ro>;
using Positions = std::vector<std::pair<int64_t, int64_t>>;

fk::Tensor f64(const Array& a) {
  return from_dlpack(a).to(fk::DType::F64).contiguous();
}

// Two arrays of one shape as host f64 values and that shape.
struct Pair {
  std::vector<double> x, y;
  fk::Dims shape;
};
Pair pair_of(const Array& x, const Array& y, const char* where, size_t ndim = 0) {
  const fk::Tensor a = f64(x), b = f64(y);
  FK_CHECK(a.shape() == b.shape(), where, "two arrays of one shape",
           a.shape().str() + " and " + b.shape().str());
  FK_CHECK(ndim == 0 || a.dim() == static_cast<int64_t>(ndim), where,
           std::to_string(ndim) + "-D arrays", a.shape().str());
  return {a.to_vector<double>(), b.to_vector<double>(), a.shape()};
}

}  // namespace

void bind_nefi_metrics(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("metrics", "nefi's metrics on arrays");
  m.def("mse", [](const Array& x, const Array& gt) { return nefi::mse(f64(x), f64(gt)); });
  m.def(
      "psnr",
      [](const Array& x, const Array& gt, std::optional<double> data_range) {
        if (!data_range) return nefi::psnr(f64(x), f64(gt));
        const Pair p = pair_of(x, gt, "psnr");
        return nefi::thermal::psnr_range(p.x, p.y, *data_range);
      },
      nb::arg("x"), nb::arg("gt"), nb::arg("data_range").none());
  m.def("relative_error",
        [](const Array& x, const Array& gt) { return nefi::relative_error(f64(x), f64(gt)); });
  m.def(
      "ssim",
      [](const Array& x, const Array& gt, std::optional<double> data_range) {
        return nefi::ssim(f64(x), f64(gt), data_range);
      },
      nb::arg("x"), nb::arg("gt"), nb::arg("data_range").none());
  m.def(
      "masked_ssim",
      [](const Array& x, const Array& gt, const Array& mask, std::optional<double> data_range) {
        return nefi::masked_ssim(f64(x), f64(gt), f64(mask), data_range);
      },
      nb::arg("x"), nb::arg("gt"), nb::arg("mask"), nb::arg("data_range").none());
  m.def("iou", [](const Array& x, const Array& gt, double fraction) {
    return nefi::iou(f64(x), f64(gt), fraction);
  });
  m.def("iou_above", [](const Array& x, const Array& gt, double tau) {
    return nefi::iou_above(f64(x), f64(gt), tau);
  });
  m.def("iou_below", [](const Array& x, const Array& gt, double tau) {
    const Pair p = pair_of(x, gt, "iou_below");
    return nefi::thermal::iou_below(p.x, p.y, tau);
  });
  m.def("edge_f1", [](const Array& x, const Array& gt, double threshold, int dilate) {
    const Pair p = pair_of(x, gt, "edge_f1");
    return nefi::thermal::edge_f1(p.x, p.y, p.shape, threshold, dilate);
  });
  m.def("gmsd", [](const Array& x, const Array& ref, double c) {
    const Pair p = pair_of(x, ref, "gmsd", 2);
    return nefi::gmsd(p.x, p.y, p.shape, c);
  });
  m.def("sliced_wasserstein", [](const Array& x, const Array& ref, int n_proj) {
    const Pair p = pair_of(x, ref, "sliced_wasserstein", 2);
    return nefi::sliced_wasserstein(p.x, p.y, p.shape, n_proj);
  });
  m.def("peak_positions", [](const Array& map, double threshold) {
    const fk::Tensor t = f64(map);
    FK_CHECK(t.dim() == 2, "peak_positions", "a 2-D map", t.shape().str());
    return nefi::peak_positions(t.to_vector<double>(), t.shape(), threshold);
  });
  m.def("hungarian_f1", [](const Positions& pred, const Positions& truth, double radius) {
    const nefi::PeakMatch pm = nefi::hungarian_f1(pred, truth, radius);
    nb::dict d;
    d["f1"] = pm.f1;
    d["true_positives"] = pm.true_positives;
    d["n_pred"] = pm.n_pred;
    d["n_true"] = pm.n_true;
    d["mean_distance"] = pm.mean_distance;
    return d;
  });
}

}  // namespace fkpy
