#include "minkowski/ops/normalization.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "minkowski/ops/feature_rows.h"
#include "minkowski/ops/normalization_device.h"

namespace minkowski {

namespace {

// Rows per block of the statistics' partial sums: fixed, so that the sums do
// not depend on the thread count.
constexpr int64_t kBlockRows = 1024;

using detail::compute_dtype;

// sums[(k * S + s) * c + ch] = sum over the rows i of segment s of
// term(i, ch)[k]: per block of rows, then the blocks in order. One plane per
// k keeps the channel loop's stores contiguous (vectorizable).
template <int K, typename Term>
std::vector<double> segment_sums(int64_t n, int64_t c, const Segments& seg, const Term& term) {
  const int64_t blocks = (n + kBlockRows - 1) / kBlockRows, plane = seg.count * c,
                width = plane * K;
  std::vector<double> part(static_cast<size_t>(blocks * width), 0.0);
  fk::parallel_for(0, blocks, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      double* p = part.data() + b * width;
      for (int64_t i = b * kBlockRows; i < std::min(n, (b + 1) * kBlockRows); ++i) {
        double* q = p + seg.of(i) * c;
        for (int64_t ch = 0; ch < c; ++ch) {
          std::array<double, K> t = term(i, ch);
          for (int k = 0; k < K; ++k) q[k * plane + ch] += t[k];
        }
      }
    }
  });
  std::vector<double> out(static_cast<size_t>(width), 0.0);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < width; ++j) out[j] += part[b * width + j];
  return out;
}

void check_input(const fk::Tensor& x, const Segments& seg, const char* where) {
  FK_CHECK(x.defined() && x.dim() == 2, where, "2-D features (N x C)",
           x.defined() ? x.shape().str() : "undefined");
  FK_CHECK(fk::is_floating(x.dtype()), where, "f32, f64, f16 or bf16 features",
           fk::name(x.dtype()));
  const int64_t n = x.size(0);
  if (seg.of_row.empty() && seg.count == 1) {
    FK_CHECK(seg.rows < 0 || seg.rows == n, where, "one segment of the " + fk::to_text(n) + " rows",
             "one segment of " + fk::to_text(seg.rows) + " rows");
    return;
  }
  FK_CHECK(static_cast<int64_t>(seg.of_row.size()) == n, where,
           "a segment for each of the " + fk::to_text(n) + " rows",
           fk::to_text(seg.of_row.size()) + " segment entries for " + fk::to_text(seg.count) +
               " segments");
}

void check_affine(const fk::Tensor& p, const fk::Tensor& x, const char* what, const char* where) {
  if (!p.defined()) return;
  FK_CHECK(p.numel() == x.size(1) && p.dim() == 1, where,
           std::string("a ") + what + " of shape (" + fk::to_text(x.size(1)) + ")",
           p.shape().str());
  FK_CHECK(p.dtype() == x.dtype(), where,
           std::string("a ") + what + " of the features' dtype " + fk::name(x.dtype()),
           fk::name(p.dtype()));
  detail::check_same_device(x, p, where, (std::string("the ") + what).c_str());
}

// The module's parameters fix the features' dtype.
void check_module_dtype(const fk::Tensor& x, const fk::Tensor& weight, const char* where) {
  if (!weight.defined()) return;
  FK_CHECK(x.dtype() == weight.dtype(), where,
           std::string("features of the module's dtype ") + fk::name(weight.dtype()),
           fk::name(x.dtype()));
}

std::vector<double> values_or(const fk::Tensor& p, int64_t c, double fill) {
  return p.defined() ? p.to_vector<double>() : std::vector<double>(static_cast<size_t>(c), fill);
}

// The elementwise passes run in the compute type T (f32 for f32/f16/bf16, f64
// for f64) with per-(segment, channel) coefficients formed in f64:
// y = (x - mean) a + b, centred first with the mean split into T's nearest
// value and the rest (x - mean_hi is exact near the mean, so a large mean
// costs no precision).
template <typename T>
fk::Tensor forward_kernel(const fk::Tensor& xc, const Segments& seg, const NormStats& st,
                          const std::vector<double>& w, const std::vector<double>& b) {
  const int64_t n = xc.size(0), c = xc.size(1), sc = seg.count * c;
  std::vector<T> mean(static_cast<size_t>(sc)), rest(static_cast<size_t>(sc)),
      scale(static_cast<size_t>(sc)), shift(static_cast<size_t>(sc));
  for (int64_t k = 0; k < sc; ++k) {
    mean[k] = static_cast<T>(st.mean[k]);
    rest[k] = static_cast<T>(st.mean[k] - static_cast<double>(mean[k]));
    scale[k] = static_cast<T>(st.invstd[k] * w[k % c]);
    shift[k] = static_cast<T>(b[k % c]);
  }
  fk::Tensor y = fk::empty({n, c}, {xc.dtype()});
  const T* xp = xc.data<T>();
  T* yp = y.data<T>();
  const T *mp = mean.data(), *rp = rest.data(), *sp = scale.data(), *hp = shift.data();
  fk::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t k0 = seg.of(i) * c;
      const T* xi = xp + i * c;
      T* yi = yp + i * c;
      for (int64_t ch = 0; ch < c; ++ch)
        yi[ch] = (xi[ch] - mp[k0 + ch] - rp[k0 + ch]) * sp[k0 + ch] + hp[k0 + ch];
    }
  });
  return y;
}

template <typename T>
NormGrads backward_kernel(const fk::Tensor& gc, const fk::Tensor& xc, const Segments& seg,
                          const NormStats& st, const std::vector<double>& w, bool batch_stats,
                          bool need_x) {
  const int64_t n = xc.size(0), c = xc.size(1), sc = seg.count * c;
  const T* xp = xc.data<T>();
  const T* gp = gc.data<T>();
  auto xhat = [&](int64_t i, int64_t ch) {
    const int64_t s = seg.of(i) * c + ch;
    return (static_cast<double>(xp[i * c + ch]) - st.mean[s]) * st.invstd[s];
  };
  // Per (segment, channel): sum g (plane 0) and sum g * xhat (plane 1).
  std::vector<double> sums = segment_sums<2>(n, c, seg, [&](int64_t i, int64_t ch) {
    double g = static_cast<double>(gp[i * c + ch]);
    return std::array<double, 2>{g, g * xhat(i, ch)};
  });
  NormGrads r;
  std::vector<double> dw(static_cast<size_t>(c), 0.0), db(static_cast<size_t>(c), 0.0);
  for (int64_t s = 0; s < seg.count; ++s)
    for (int64_t ch = 0; ch < c; ++ch) {
      db[ch] += sums[s * c + ch];
      dw[ch] += sums[sc + s * c + ch];
    }
  r.weight = fk::from_vector(dw, fk::Dims{c});
  r.bias = fk::from_vector(db, fk::Dims{c});
  if (!need_x) return r;
  // dx = w invstd (g - mean(g) - xhat mean(g xhat)) per (segment, channel) k,
  // i.e. dx = scale[k] g - xhat[k] coef_x[k] - coef_1[k] with the
  // coefficients hoisted out of the row loop (batch statistics); with fixed
  // statistics only scale[k] g remains.
  // dx = s (g - mean(g) - xhat mean(g xhat)) with s = w invstd and
  // xhat = (x - mean) invstd, i.e. dx = s g - (x - mean) u - v per (segment,
  // channel) k with u = s invstd mean(g xhat), v = s mean(g) formed in f64
  // (with fixed statistics u = v = 0).
  std::vector<T> m(static_cast<size_t>(sc)), m_rest(static_cast<size_t>(sc)),
      s(static_cast<size_t>(sc)), u(static_cast<size_t>(sc), T(0)),
      v(static_cast<size_t>(sc), T(0));
  for (int64_t k = 0; k < sc; ++k) {
    const double a = w[k % c] * st.invstd[k];
    m[k] = static_cast<T>(st.mean[k]);  // split as in forward_kernel
    m_rest[k] = static_cast<T>(st.mean[k] - static_cast<double>(m[k]));
    s[k] = static_cast<T>(a);
    if (batch_stats) {
      const double inv_n = 1.0 / static_cast<double>(st.rows[k / c]);
      u[k] = static_cast<T>(a * st.invstd[k] * sums[sc + k] * inv_n);
      v[k] = static_cast<T>(a * sums[k] * inv_n);
    }
  }
  r.x = fk::empty({n, c}, {xc.dtype()});
  T* dp = r.x.data<T>();
  const T *mp = m.data(), *rp = m_rest.data(), *sp = s.data(), *up = u.data(), *vp = v.data();
  fk::parallel_for(0, n, 1024, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      const int64_t k0 = seg.of(i) * c;
      const T* xi = xp + i * c;
      const T* gi = gp + i * c;
      T* di = dp + i * c;
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t k = k0 + ch;
        di[ch] = gi[ch] * sp[k] - (xi[ch] - mp[k] - rp[k]) * up[k] - vp[k];
      }
    }
  });
  return r;
}

class NormalizeBackward : public fk::autograd::Node {
 public:
  fk::autograd::SavedTensor x, weight;
  std::shared_ptr<const Segments> seg;
  NormStats stats;
  bool batch_stats = true;

  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    if (!grads[0].defined()) return {fk::Tensor(), fk::Tensor(), fk::Tensor()};
    NormGrads g = normalize_backward(grads[0], x.unpack(name()), *seg, stats, weight.unpack(name()),
                                     batch_stats, next[0].fn != nullptr, next[1].fn != nullptr,
                                     next[2].fn != nullptr);
    return {g.x, g.weight, g.bias};
  }
  const char* name() const override { return "minkowski::NormalizeBackward"; }
  void for_each_saved(const std::function<void(fk::autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(weight);
  }
};

}  // namespace

Segments single_segment(int64_t rows) {
  FK_CHECK(rows >= 0, "minkowski::single_segment", "a row count >= 0", fk::to_text(rows));
  Segments seg;
  seg.rows = rows;
  return seg;
}

namespace {
// Dense segment ids of batch indices, in increasing batch order.
template <typename B>
Segments segments_of_batches(const std::vector<B>& batch) {
  std::map<B, int32_t> id;
  for (B b : batch) id.emplace(b, 0);
  int32_t next = 0;
  for (auto& [b, s] : id) s = next++;
  Segments seg;
  seg.of_row.resize(batch.size());
  seg.count = static_cast<int64_t>(id.size());
  for (size_t i = 0; i < batch.size(); ++i) seg.of_row[i] = id[batch[i]];
  return seg;
}
}  // namespace

Segments batch_segments(const SparseTensor& x) {
  FK_CHECK(x.defined(), "minkowski::batch_segments", "a sparse tensor", "an empty handle");
  auto map = x.manager()->map(x.key());
  std::vector<int32_t> batch(static_cast<size_t>(map->size()));
  for (int64_t i = 0; i < map->size(); ++i) batch[i] = map->row(i)[0];
  return segments_of_batches(batch);
}

Segments batch_segments(const TensorField& x) {
  FK_CHECK(x.defined(), "minkowski::batch_segments", "a field", "an empty TensorField");
  // Column 0 holds the batch index, rounded (half to even) as quantizing
  // rounds it: a point at 1 - 1e-7 is in batch 1.
  std::vector<double> batch = x.C().select(1, 0).to_vector<double>();
  for (double& b : batch) {
    // A NaN keyed the ordered map past its ordering (it joined batch 0).
    const double given = b;
    b = std::nearbyint(b);
    FK_CHECK(std::isfinite(b) && b >= -2147483648.0 && b <= 2147483647.0,
             "minkowski::batch_segments", "finite batch indices within int32", fk::to_text(given));
  }
  return segments_of_batches(batch);
}

NormStats normalize_statistics(const fk::Tensor& x, const Segments& seg, double eps) {
  const char* where = "minkowski::normalize";
  check_input(x, seg, where);
  const int64_t n = x.size(0), c = x.size(1), sc = seg.count * c;
  fk::Tensor xc = x.to(compute_dtype(x.dtype())).contiguous();
  NormStats st;
  st.rows.assign(static_cast<size_t>(seg.count), 0);
  if (seg.count == 1) {
    st.rows[0] = n;
  } else {
    for (int32_t s : seg.of_row) ++st.rows[s];
  }
  for (int64_t s = 0; s < seg.count; ++s)
    FK_CHECK(st.rows[s] > 0, where, "at least one row in every segment",
             "no rows in segment " + fk::to_text(s));
  auto stats = [&]<typename T>(const T* xp) {
    st.mean = segment_sums<1>(n, c, seg, [&](int64_t i, int64_t ch) {
      return std::array<double, 1>{static_cast<double>(xp[i * c + ch])};
    });
    for (int64_t k = 0; k < sc; ++k) st.mean[k] /= static_cast<double>(st.rows[k / c]);
    st.var = segment_sums<1>(n, c, seg, [&](int64_t i, int64_t ch) {
      double d = static_cast<double>(xp[i * c + ch]) - st.mean[seg.of(i) * c + ch];
      return std::array<double, 1>{d * d};
    });
    for (int64_t k = 0; k < sc; ++k) st.var[k] /= static_cast<double>(st.rows[k / c]);
  };
  if (xc.device().is_cuda()) {
    st.moments = device_statistics(xc, seg, st.rows, kBlockRows, eps);
    return st;
  }
  if (xc.dtype() == fk::DType::F64) {
    stats(xc.data<double>());
  } else {
    stats(xc.data<float>());
  }
  st.invstd.resize(static_cast<size_t>(sc));
  for (int64_t k = 0; k < sc; ++k) st.invstd[k] = 1.0 / std::sqrt(st.var[k] + eps);
  return st;
}

NormStats fixed_statistics(const fk::Tensor& mean, const fk::Tensor& var, double eps) {
  NormStats st;
  st.rows = {0};
  if (mean.defined() && mean.device().is_cuda()) {
    FK_CHECK(var.defined() && var.device() == mean.device() && var.numel() == mean.numel(),
             "minkowski::fixed_statistics",
             fk::to_text(mean.numel()) + " variances on " + mean.device().str(),
             var.defined() ? fk::to_text(var.numel()) + " on " + var.device().str() : "undefined");
    st.moments = device_fixed_statistics(mean, var, eps);
    return st;
  }
  st.mean = mean.to_vector<double>();
  st.var = var.to_vector<double>();
  FK_CHECK(st.mean.size() == st.var.size(), "minkowski::fixed_statistics",
           "as many variances as means (" + fk::to_text(st.mean.size()) + ")",
           fk::to_text(st.var.size()));
  st.invstd.resize(st.var.size());
  for (size_t k = 0; k < st.var.size(); ++k) st.invstd[k] = 1.0 / std::sqrt(st.var[k] + eps);
  return st;
}

NormStats NormStats::host() const {
  if (!moments.defined() || !mean.empty()) return *this;
  NormStats h = *this;
  const int64_t sc = moments.size(1);
  const std::vector<double> v = moments.to_vector<double>();
  h.mean.assign(v.begin(), v.begin() + sc);
  h.var.assign(v.begin() + sc, v.begin() + 2 * sc);
  h.invstd.assign(v.begin() + 2 * sc, v.begin() + 3 * sc);
  h.moments = fk::Tensor();
  return h;
}

namespace {
// The statistics' size, S x C, wherever they are.
int64_t stats_size(const NormStats& st) {
  return st.moments.defined() ? st.moments.size(1) : static_cast<int64_t>(st.mean.size());
}
// The statistics as moments on x's device (uploaded when they are host vectors).
fk::Tensor moments_on(const NormStats& st, const fk::Tensor& x, const char* where) {
  if (!st.moments.defined()) return device_upload_statistics(st, x.size(1), x.device());
  detail::check_same_device(x, st.moments, where, "the statistics");
  return st.moments;
}
}  // namespace

fk::Tensor normalize_forward(const fk::Tensor& x, const Segments& seg, const NormStats& stats,
                             const fk::Tensor& weight, const fk::Tensor& bias) {
  const char* where = "minkowski::normalize";
  check_input(x, seg, where);
  const int64_t c = x.size(1);
  FK_CHECK(
      stats_size(stats) == seg.count * c, where,
      "statistics for " + fk::to_text(seg.count) + " segment(s) x " + fk::to_text(c) + " channels",
      fk::to_text(stats_size(stats)) + " values");
  check_affine(weight, x, "weight", where);
  check_affine(bias, x, "bias", where);
  fk::Tensor xc = x.to(compute_dtype(x.dtype())).contiguous();
  if (xc.device().is_cuda())
    return device_normalize_forward(xc, seg, moments_on(stats, xc, where), weight, bias)
        .to(x.dtype());
  const NormStats st = stats.host();
  auto w = values_or(weight, c, 1.0), b = values_or(bias, c, 0.0);
  fk::Tensor y = xc.dtype() == fk::DType::F64 ? forward_kernel<double>(xc, seg, st, w, b)
                                              : forward_kernel<float>(xc, seg, st, w, b);
  return y.to(x.dtype());
}

NormGrads normalize_backward(const fk::Tensor& grad, const fk::Tensor& x, const Segments& seg,
                             const NormStats& stats, const fk::Tensor& weight, bool batch_stats,
                             bool need_x, bool need_weight, bool need_bias) {
  detail::check_same_device(x, grad, "minkowski::normalize backward", "the gradient");
  const fk::DType cd = compute_dtype(x.dtype());
  fk::Tensor xc = x.to(cd).contiguous(), gc = grad.to(cd).contiguous();
  NormGrads g;
  if (xc.device().is_cuda()) {
    g = device_normalize_backward(gc, xc, seg,
                                  moments_on(stats, xc, "minkowski::normalize backward"), weight,
                                  batch_stats, need_x, kBlockRows);
  } else {
    const NormStats st = stats.host();
    auto w = values_or(weight, x.size(1), 1.0);
    g = cd == fk::DType::F64 ? backward_kernel<double>(gc, xc, seg, st, w, batch_stats, need_x)
                             : backward_kernel<float>(gc, xc, seg, st, w, batch_stats, need_x);
  }
  if (g.x.defined()) g.x = g.x.to(x.dtype());
  const fk::DType pd = weight.defined() ? weight.dtype() : x.dtype();
  // the parameters' gradients come as f64 (summed on the host, or on x's
  // device): in the parameter's dtype, on x's device
  g.weight = need_weight ? g.weight.to(pd).to(x.device()) : fk::Tensor();
  g.bias = need_bias ? g.bias.to(pd).to(x.device()) : fk::Tensor();
  return g;
}

fk::Tensor normalize(const fk::Tensor& x, const Segments& segments, double eps,
                     const fk::Tensor& weight, const fk::Tensor& bias, const NormStats* fixed,
                     NormStats* computed) {
  fk::profile::OpScope scope("minkowski.normalize");
  // A copy only when something keeps or extends the segments: the autograd
  // node, or (features on a device) the rows' segments uploaded once for the
  // statistics, the forward and the backward.
  const bool grad = fk::autograd::needs_grad(x, weight, bias);
  const bool upload =
      x.defined() && x.device().is_cuda() && !segments.of_row.empty() &&
      !(segments.device_rows.defined() && segments.device_rows.device() == x.device());
  std::shared_ptr<Segments> shared;
  if (grad || upload) shared = std::make_shared<Segments>(segments);
  if (upload)
    shared->device_rows =
        fk::from_vector(shared->of_row, fk::Dims{static_cast<int64_t>(shared->of_row.size())})
            .to(x.device());
  const Segments& seg = shared ? *shared : segments;
  NormStats st = fixed ? *fixed : normalize_statistics(x, seg, eps);
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    y = normalize_forward(x.detach(), seg, st, weight.defined() ? weight.detach() : weight,
                          bias.defined() ? bias.detach() : bias);
  }
  if (grad) {
    auto node = std::make_shared<NormalizeBackward>();
    node->x = x;
    node->weight = weight;
    node->seg = std::move(shared);
    node->stats = st;
    node->batch_stats = fixed == nullptr;
    fk::autograd::record(node, {x, weight, bias}, y);
  }
  if (computed) *computed = std::move(st);
  return y;
}

BatchNorm::BatchNorm(int64_t channels, double eps, std::optional<double> momentum, bool affine,
                     bool track_running_stats, fk::DType dtype)
    : channels_(channels), eps_(eps), momentum_(momentum), track_(track_running_stats) {
  const char* where = "minkowski::BatchNorm";
  FK_CHECK(channels > 0, where, "a positive channel count", fk::to_text(channels));
  FK_CHECK(fk::is_floating(dtype), where, "f32, f64, f16 or bf16", fk::name(dtype));
  if (momentum_)
    FK_CHECK(*momentum_ >= 0 && *momentum_ <= 1, where, "a momentum in [0, 1]",
             fk::to_text(*momentum_));
  if (affine) {
    weight = fk::ones({channels}, {dtype}).set_requires_grad(true);
    bias = fk::zeros({channels}, {dtype}).set_requires_grad(true);
  }
  const fk::DType sd = compute_dtype(dtype);
  if (track_) {
    running_mean = fk::zeros({channels}, {sd});
    running_var = fk::ones({channels}, {sd});
  }
}

fk::Tensor BatchNorm::forward(const fk::Tensor& x) {
  const char* where = "minkowski::BatchNorm";
  FK_CHECK(x.defined() && x.dim() == 2 && x.size(1) == channels_, where,
           "features of shape N x " + fk::to_text(channels_),
           x.defined() ? x.shape().str() : "undefined");
  check_module_dtype(x, weight, where);
  const int64_t n = x.size(0);
  if (!training_ && track_) {
    NormStats st = fixed_statistics(running_mean, running_var, eps_);
    return normalize(x, single_segment(n), eps_, weight, bias, &st);
  }
  FK_CHECK(n >= 2, where, "at least 2 points for batch statistics", fk::to_text(n) + " point(s)");
  NormStats st;
  fk::Tensor y = normalize(x, single_segment(n), eps_, weight, bias, nullptr, &st);
  if (training_ && track_) {
    ++num_batches_tracked;
    const double m = momentum_ ? *momentum_ : 1.0 / static_cast<double>(num_batches_tracked);
    const double unbias = static_cast<double>(n) / static_cast<double>(n - 1);
    if (st.moments.defined() && running_mean.device() == st.moments.device()) {
      device_running_update(st.moments, m, unbias, running_mean, running_var);
      return y;
    }
    const NormStats hs = st.host();
    auto rm = running_mean.to_vector<double>(), rv = running_var.to_vector<double>();
    for (int64_t c = 0; c < channels_; ++c) {
      rm[c] = (1 - m) * rm[c] + m * hs.mean[c];
      rv[c] = (1 - m) * rv[c] + m * hs.var[c] * unbias;
    }
    running_mean.copy_(fk::from_vector(rm, fk::Dims{channels_}));
    running_var.copy_(fk::from_vector(rv, fk::Dims{channels_}));
  }
  return y;
}

InstanceNorm::InstanceNorm(int64_t channels, double eps, bool affine, fk::DType dtype)
    : channels_(channels), eps_(eps) {
  const char* where = "minkowski::InstanceNorm";
  FK_CHECK(channels > 0, where, "a positive channel count", fk::to_text(channels));
  FK_CHECK(fk::is_floating(dtype), where, "f32, f64, f16 or bf16", fk::name(dtype));
  if (affine) {
    weight = fk::ones({channels}, {dtype}).set_requires_grad(true);
    bias = fk::zeros({channels}, {dtype}).set_requires_grad(true);
  }
}

fk::Tensor InstanceNorm::normalize_items(const fk::Tensor& features, const Segments& seg) const {
  const char* where = "minkowski::InstanceNorm";
  FK_CHECK(features.size(1) == channels_, where, fk::to_text(channels_) + " channels",
           fk::to_text(features.size(1)));
  check_module_dtype(features, weight, where);
  return normalize(features, seg, eps_, weight, bias);
}

SparseTensor InstanceNorm::forward(const SparseTensor& x) const {
  FK_CHECK(x.defined(), "minkowski::InstanceNorm", "a sparse tensor", "an empty handle");
  return x.with_features(normalize_items(x.F(), batch_segments(x)));
}

TensorField InstanceNorm::forward(const TensorField& x) const {
  return x.with_features(normalize_items(x.F(), batch_segments(x)));
}

}  // namespace minkowski
