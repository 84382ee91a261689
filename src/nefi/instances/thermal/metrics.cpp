#include "nefi/instances/thermal/metrics.h"

#include <algorithm>
#include <cmath>

#include "fk/error.h"
#include "nefi/solve/metrics.h"

namespace nefi::thermal {
namespace {

void check_pair(const std::vector<double>& x, const std::vector<double>& gt, const char* where) {
  FK_CHECK(x.size() == gt.size() && !x.empty(), where, "two non-empty volumes of one size",
           fk::to_text(x.size()) + " vs " + fk::to_text(gt.size()));
}

void check_volume(const std::vector<double>& v, const fk::Dims& shape, const char* where) {
  FK_CHECK(shape.size() == 3 && static_cast<int64_t>(v.size()) == shape.numel(), where,
           "a volume of shape (nx, ny, nz)", shape.str() + " with " + fk::to_text(v.size()));
}

// torch's median: the lower of the two middle values for an even count.
double lower_median(std::vector<double> v) {
  const auto m = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), m, v.end());
  return *m;
}

// 1.4826 · MAD with lower medians: a robust σ of the values.
double mad_sigma(const std::vector<double>& v) {
  const double med = lower_median(v);
  std::vector<double> dev(v.size());
  for (size_t i = 0; i < v.size(); ++i) dev[i] = std::abs(v[i] - med);
  return 1.4826 * lower_median(std::move(dev));
}

// Median of the flagged cells' centre depths in each column (NaN if none).
std::vector<double> column_depths(const std::vector<bool>& flags, int64_t cols, int64_t nz,
                                  double thickness) {
  std::vector<double> depth(cols, std::nan("")), z;
  const double hz = thickness / static_cast<double>(nz);
  for (int64_t p = 0; p < cols; ++p) {
    z.clear();
    for (int64_t k = 0; k < nz; ++k)
      if (flags[p * nz + k]) z.push_back((static_cast<double>(k) + 0.5) * hz);
    if (z.empty()) continue;
    depth[p] = 0.5 * (z[(z.size() - 1) / 2] + z[z.size() / 2]);  // z is ascending
  }
  return depth;
}

// |∇v| in cell units: central differences inside, one-sided at the edges.
std::vector<double> gradient_magnitude(const std::vector<double>& v, const fk::Dims& s) {
  const int64_t st[3] = {s[1] * s[2], s[2], 1};
  std::vector<double> g(v.size(), 0.0);
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        const int64_t p = i * st[0] + j * st[1] + k;
        const int64_t c[3] = {i, j, k};
        double q = 0;
        for (int a = 0; a < 3; ++a) {
          if (s[a] < 2) continue;
          const int64_t lo = c[a] > 0 ? p - st[a] : p, hi = c[a] + 1 < s[a] ? p + st[a] : p;
          const double d = (v[hi] - v[lo]) / static_cast<double>((hi - lo) / st[a]);
          q += d * d;
        }
        g[p] = std::sqrt(q);
      }
  return g;
}

// Binary dilation by a (2r + 1)³ cube.
std::vector<bool> dilate_cube(const std::vector<bool>& m, const fk::Dims& s, int r) {
  std::vector<bool> out(m.size(), false);
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        if (!m[(i * s[1] + j) * s[2] + k]) continue;
        for (int64_t a = std::max<int64_t>(0, i - r); a <= std::min(s[0] - 1, i + r); ++a)
          for (int64_t b = std::max<int64_t>(0, j - r); b <= std::min(s[1] - 1, j + r); ++b)
            for (int64_t c = std::max<int64_t>(0, k - r); c <= std::min(s[2] - 1, k + r); ++c)
              out[(a * s[1] + b) * s[2] + c] = true;
      }
  return out;
}

}  // namespace

double psnr_range(const std::vector<double>& x, const std::vector<double>& gt, double range) {
  check_pair(x, gt, "nefi::thermal::psnr_range");
  FK_CHECK(range > 0, "nefi::thermal::psnr_range", "a positive data range", fk::to_text(range));
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m += (x[i] - gt[i]) * (x[i] - gt[i]);
  m /= static_cast<double>(x.size());
  if (std::isnan(m)) return m;  // a NaN field scores NaN, never the cap for an exact match
  return m > 0 ? std::min(kPsnrCap, 10.0 * std::log10(range * range / m)) : kPsnrCap;
}

double ssim_depth(const std::vector<double>& x, const std::vector<double>& gt,
                  const fk::Dims& shape, double range) {
  check_volume(x, shape, "nefi::thermal::ssim_depth");
  check_volume(gt, shape, "nefi::thermal::ssim_depth");
  return nefi::ssim(x, gt, shape, range);  // slices along the last axis: depth
}

double iou_below(const std::vector<double>& x, const std::vector<double>& gt, double tau) {
  check_pair(x, gt, "nefi::thermal::iou_below");
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const bool a = x[i] < tau, b = gt[i] < tau;
    inter += a && b;
    uni += a || b;
  }
  return uni ? static_cast<double>(inter) / static_cast<double>(uni) : 1.0;
}

double edge_f1(const std::vector<double>& x, const std::vector<double>& gt, const fk::Dims& shape,
               double threshold, int dilate) {
  check_volume(x, shape, "nefi::thermal::edge_f1");
  check_volume(gt, shape, "nefi::thermal::edge_f1");
  FK_CHECK(dilate >= 0, "nefi::thermal::edge_f1", "dilate >= 0", fk::to_text(dilate));
  const auto gx = gradient_magnitude(x, shape), gg = gradient_magnitude(gt, shape);
  const double thr = threshold * *std::max_element(gg.begin(), gg.end());
  std::vector<bool> pe(x.size()), ge(x.size());
  int64_t np = 0, ng = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    pe[i] = gx[i] > thr;
    ge[i] = gg[i] > thr;
    np += pe[i];
    ng += ge[i];
  }
  if (np == 0 && ng == 0) return 1.0;
  if (np == 0 || ng == 0) return 0.0;
  const auto pd = dilate_cube(pe, shape, dilate), gd = dilate_cube(ge, shape, dilate);
  int64_t tp_p = 0, tp_g = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    tp_p += pe[i] && gd[i];
    tp_g += ge[i] && pd[i];
  }
  const double prec = static_cast<double>(tp_p) / np, rec = static_cast<double>(tp_g) / ng;
  return prec + rec > 0 ? 2 * prec * rec / (prec + rec) : 0.0;
}

DefectMap project_defects(const std::vector<double>& alpha, const fk::Dims& shape, double thickness,
                          double k) {
  check_volume(alpha, shape, "nefi::thermal::project_defects");
  constexpr double kMinSigma = 1e-3;  // floor on the threshold, relative deficit units
  const int64_t nz = shape[2], cols = shape[0] * shape[1];
  std::vector<double> bulk(nz), slice(cols);
  double bulk_mean = 0;
  for (int64_t z = 0; z < nz; ++z) {
    for (int64_t p = 0; p < cols; ++p) slice[p] = alpha[p * nz + z];
    bulk[z] = lower_median(slice);
    bulk_mean += bulk[z] / static_cast<double>(nz);
  }
  std::vector<double> column(cols), cell(alpha.size());
  for (int64_t p = 0; p < cols; ++p) {
    double mean = 0;
    for (int64_t z = 0; z < nz; ++z) {
      mean += alpha[p * nz + z] / static_cast<double>(nz);
      cell[p * nz + z] = 1.0 - alpha[p * nz + z] / bulk[z];
    }
    column[p] = 1.0 - mean / bulk_mean;
  }
  DefectMap m;
  const double thr2d = std::max(k * mad_sigma(column), kMinSigma);
  m.mask.resize(cols);
  std::vector<double> sound;
  for (int64_t p = 0; p < cols; ++p) {
    m.mask[p] = column[p] > thr2d;
    if (!m.mask[p]) sound.insert(sound.end(), cell.begin() + p * nz, cell.begin() + (p + 1) * nz);
  }
  const double thr = std::max(k * mad_sigma(sound.empty() ? cell : sound), kMinSigma);
  std::vector<bool> flags(cell.size());
  for (size_t i = 0; i < cell.size(); ++i) flags[i] = m.mask[i / nz] && cell[i] > thr;
  m.depth = column_depths(flags, cols, nz, thickness);
  return m;
}

DefectMap project_truth(const std::vector<bool>& defects, const fk::Dims& shape, double thickness) {
  FK_CHECK(shape.size() == 3 && static_cast<int64_t>(defects.size()) == shape.numel(),
           "nefi::thermal::project_truth", "a mask of shape (nx, ny, nz)",
           shape.str() + " with " + fk::to_text(defects.size()));
  const int64_t nz = shape[2], cols = shape[0] * shape[1];
  DefectMap m;
  m.mask.assign(cols, false);
  for (size_t i = 0; i < defects.size(); ++i)
    if (defects[i]) m.mask[i / nz] = true;
  m.depth = column_depths(defects, cols, nz, thickness);
  return m;
}

DepthErrors depth_errors(const DefectMap& pred, const DefectMap& gt) {
  FK_CHECK(pred.mask.size() == gt.mask.size() && pred.depth.size() == gt.depth.size() &&
               pred.mask.size() == pred.depth.size(),
           "nefi::thermal::depth_errors", "two defect maps of one size",
           fk::to_text(pred.mask.size()) + " vs " + fk::to_text(gt.mask.size()));
  DepthErrors e;
  for (size_t p = 0; p < gt.mask.size(); ++p) {
    const double d = gt.depth[p], dh = pred.depth[p];
    if (!gt.mask[p] || !pred.mask[p] || !std::isfinite(d) || !std::isfinite(dh) || d <= 0) continue;
    e.abs_rel += std::abs(dh - d) / d;
    e.rmse += (dh - d) * (dh - d);
    e.delta1 += dh > 0 && std::max(dh / d, d / dh) < 1.25 ? 1.0 : 0.0;
    ++e.columns;
  }
  if (e.columns == 0) return e;
  const auto n = static_cast<double>(e.columns);
  e.abs_rel /= n;
  e.rmse = std::sqrt(e.rmse / n);
  e.delta1 /= n;
  return e;
}

double iou_2d(const std::vector<bool>& a, const std::vector<bool>& b) {
  FK_CHECK(a.size() == b.size(), "nefi::thermal::iou_2d", "two masks of one size",
           fk::to_text(a.size()) + " vs " + fk::to_text(b.size()));
  int64_t inter = 0, uni = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    inter += a[i] && b[i];
    uni += a[i] || b[i];
  }
  return uni ? static_cast<double>(inter) / static_cast<double>(uni) : 1.0;
}

double dice_2d(const std::vector<bool>& a, const std::vector<bool>& b) {
  FK_CHECK(a.size() == b.size(), "nefi::thermal::dice_2d", "two masks of one size",
           fk::to_text(a.size()) + " vs " + fk::to_text(b.size()));
  int64_t inter = 0, total = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    inter += a[i] && b[i];
    total += static_cast<int64_t>(a[i]) + static_cast<int64_t>(b[i]);
  }
  return total ? 2.0 * static_cast<double>(inter) / static_cast<double>(total) : 1.0;
}

std::map<std::string, double> volume_metrics(const std::vector<double>& x,
                                             const std::vector<double>& gt, const fk::Dims& shape,
                                             const VolumeMetricOptions& o) {
  check_volume(x, shape, "nefi::thermal::volume_metrics");
  check_volume(gt, shape, "nefi::thermal::volume_metrics");
  const double range = o.alpha_max - o.alpha_min;
  std::map<std::string, double> m;
  double se = 0;
  for (size_t i = 0; i < x.size(); ++i) se += (x[i] - gt[i]) * (x[i] - gt[i]);
  m["mse"] = se / static_cast<double>(x.size());
  m["psnr"] = psnr_range(x, gt, range);
  m["ssim"] = ssim_depth(x, gt, shape, range);
  m["iou"] = iou_below(x, gt, o.iou_tau);
  m["edge_f1"] = edge_f1(x, gt, shape, o.edge_threshold, o.edge_dilate);
  std::vector<bool> defects(gt.size());
  for (size_t i = 0; i < gt.size(); ++i) defects[i] = gt[i] < o.iou_tau;
  const DefectMap pm = project_defects(x, shape, o.thickness, o.projection_k);
  const DefectMap gm = project_truth(defects, shape, o.thickness);
  m["iou_2d"] = iou_2d(pm.mask, gm.mask);
  m["dice_2d"] = dice_2d(pm.mask, gm.mask);
  const DepthErrors de = depth_errors(pm, gm);
  if (de.columns > 0) {
    m["depth_abs_rel"] = de.abs_rel;
    m["depth_rmse"] = de.rmse;
    m["depth_delta1"] = de.delta1;
  }
  return m;
}

}  // namespace nefi::thermal
