#include "nefi/field/hash_grid_field.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "nefi/field/dense.h"
#include "nefi/field/hash_grid_device.h"

namespace nefi {
namespace {

// Calls f(level, rows, weights, count) for every (point i, active level).
template <int D, typename F>
void for_each_cell(const float* xi, const cuda::HashGridLevels& lc,
                   const std::vector<double>& level_weight, F&& f) {
  int64_t row[1 << D];
  float weight[1 << D];
  for (int l = 0; l < lc.count; ++l) {
    const auto lw = static_cast<float>(level_weight[l]);
    if (lw == 0) continue;
    cuda::hash_grid_corners<D>(xi, lc.level[l], row, weight);
    for (int k = 0; k < (1 << D); ++k) weight[k] *= lw;
    f(l, row, weight, 1 << D);
  }
}

// for_each_cell at the layout's dimension (a runtime value: 1, 2 or 3).
template <typename F>
void for_each_cell(int d, const float* xi, const cuda::HashGridLevels& lc,
                   const std::vector<double>& level_weight, F&& f) {
  if (d == 1) return for_each_cell<1>(xi, lc, level_weight, f);
  if (d == 2) return for_each_cell<2>(xi, lc, level_weight, f);
  for_each_cell<3>(xi, lc, level_weight, f);
}

struct HashGridBackward : fk::autograd::Node {
  fk::Tensor coords;  // (N, d) f32, constant
  HashGridLayout layout;
  std::vector<double> level_weight;
  const char* name() const override { return "HashGridEncodeBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("hash_grid_encode_backward");
    const fk::Tensor g = grads[0].to(fk::DType::F32).contiguous();
    const int F = layout.features, levels = static_cast<int>(layout.resolution.size());
    const int64_t n = coords.size(0), width = static_cast<int64_t>(levels) * F;
    fk::Tensor out = fk::zeros({layout.entries, F});
    float* dt = out.data<float>();
    const float* gp = g.data<float>();
    const float* xp = coords.data<float>();
    // One level per thread: each writes only its own table rows.
    const cuda::HashGridLevels lc = hash_grid_levels(layout);
    const int d = layout.ndim;
    fk::parallel_for(0, levels, 1, [&](int64_t lo, int64_t hi) {
      std::vector<double> only(level_weight.size(), 0.0);
      for (int64_t l = lo; l < hi; ++l) only[l] = level_weight[l];
      for (int64_t i = 0; i < n; ++i)
        for_each_cell(d, xp + i * d, lc, only,
                      [&](int l, const int64_t* row, const float* w, int count) {
                        const float* gi = gp + i * width + l * F;
                        for (int k = 0; k < count; ++k)
                          for (int f = 0; f < F; ++f) dt[row[k] * F + f] += w[k] * gi[f];
                      });
    });
    return {out};
  }
};

}  // namespace

cuda::HashGridLevels hash_grid_levels(const HashGridLayout& L) {
  FK_CHECK(L.ndim >= 1 && L.ndim <= 3 && L.features >= 1 && L.features <= 16 &&
               L.resolution.size() >= 1 &&
               L.resolution.size() <= static_cast<size_t>(cuda::kHashGridMaxLevels) &&
               L.table_size.size() == L.resolution.size() && L.offset.size() == L.resolution.size(),
           "nefi::hash_grid_levels", "a layout of 1-3 axes, 1-16 features and 1-32 levels",
           fk::to_text(L.ndim) + " axes, " + fk::to_text(L.features) + " features, " +
               fk::to_text(L.resolution.size()) + " levels");
  cuda::HashGridLevels out;
  out.count = static_cast<int>(L.resolution.size());
  out.features = L.features;
  out.ndim = L.ndim;
  for (int l = 0; l < out.count; ++l) {
    cuda::HashGridLevel& c = out.level[l];
    const int64_t res = L.resolution[l];
    c.res = static_cast<float>(res);
    c.last = res - 1;
    c.row_stride = res + 1;
    c.plane_stride = (res + 1) * (res + 1);
    c.offset = L.offset[l];
    c.table = static_cast<uint32_t>(L.table_size[l]);
    c.hashed = L.hashed(l);
  }
  return out;
}

bool HashGridLayout::hashed(int level) const {
  int64_t vertices = 1;
  for (int a = 0; a < ndim; ++a) vertices *= resolution[level] + 1;
  return vertices > table_size[level];
}

HashGridLayout hash_grid_layout(int ndim, const HashGridConfig& c, int64_t largest_axis) {
  constexpr const char* kWhere = "nefi::HashGridField";
  FK_CHECK(ndim >= 1 && ndim <= 3, kWhere, "a 1-, 2- or 3-D domain", fk::to_text(ndim) + "-D");
  FK_CHECK(
      c.levels >= 1 && c.levels <= cuda::kHashGridMaxLevels && c.features >= 1 && c.features <= 16,
      kWhere, "levels in [1, 32] and features in [1, 16]",
      fk::to_text(c.levels) + ", " + fk::to_text(c.features));
  FK_CHECK(c.log2_table >= 4 && c.log2_table <= 24, kWhere, "log2_table in [4, 24]",
           fk::to_text(c.log2_table));
  const int64_t n_max = c.finest_resolution > 0 ? c.finest_resolution : 2 * largest_axis;
  FK_CHECK(c.base_resolution >= 1 && n_max >= c.base_resolution && n_max <= (int64_t{1} << 20),
           kWhere, "1 <= base_resolution <= finest_resolution <= 2^20",
           fk::to_text(c.base_resolution) + ", " + fk::to_text(n_max));
  HashGridLayout L;
  L.ndim = ndim;
  L.features = c.features;
  const double growth =
      c.levels > 1 ? std::exp((std::log(static_cast<double>(n_max)) - std::log(c.base_resolution)) /
                              (c.levels - 1))
                   : 1.0;
  const int64_t T = int64_t{1} << c.log2_table;
  for (int l = 0; l < c.levels; ++l) {
    const auto res = std::max<int64_t>(
        1, static_cast<int64_t>(std::floor(c.base_resolution * std::pow(growth, l) + 1e-9)));
    int64_t vertices = 1;
    for (int a = 0; a < ndim; ++a) vertices = std::min<int64_t>(vertices * (res + 1), T + 1);
    L.resolution.push_back(res);
    L.table_size.push_back(std::min(vertices, T));
    L.offset.push_back(L.entries);
    L.entries += L.table_size.back();
  }
  return L;
}

std::vector<double> hash_grid_level_weights(int levels, double progress, bool annealed) {
  std::vector<double> w(levels, 1.0);
  if (!annealed) return w;
  const double a = std::clamp(progress, 0.0, 1.0) * levels;
  for (int l = 1; l < levels; ++l) w[l] = std::clamp(a - (l - 1), 0.0, 1.0);
  return w;
}

fk::Tensor hash_grid_encode(const fk::Tensor& coords, const fk::Tensor& table,
                            const HashGridLayout& layout, const std::vector<double>& level_weight) {
  constexpr const char* kWhere = "nefi::hash_grid_encode";
  const int levels = static_cast<int>(layout.resolution.size()), F = layout.features;
  FK_CHECK(coords.dim() == 2 && coords.size(1) == layout.ndim && coords.dtype() == fk::DType::F32,
           kWhere, "f32 coordinates (N, " + fk::to_text(layout.ndim) + ")",
           std::string(fk::name(coords.dtype())) + " " + coords.shape().str());
  FK_CHECK(table.shape() == fk::Dims({layout.entries, F}) && table.dtype() == fk::DType::F32 &&
               table.device().is_cpu(),
           kWhere, "an f32 CPU table (" + fk::to_text(layout.entries) + ", " + fk::to_text(F) + ")",
           std::string(fk::name(table.dtype())) + " " + table.shape().str() + " on " +
               table.device().str());
  FK_CHECK(level_weight.size() == static_cast<size_t>(levels), kWhere,
           fk::to_text(levels) + " level weights", fk::to_text(level_weight.size()));
  FK_CHECK(coords.device().is_cpu(), kWhere, "coordinates on the cpu", coords.device().str());
  fk::profile::OpScope scope("hash_grid_encode");
  const fk::Tensor x = coords.contiguous(), t = table.detach().contiguous();
  const int64_t n = x.size(0), width = static_cast<int64_t>(levels) * F;
  fk::Tensor y = fk::empty({n, width});
  float* yp = y.data<float>();
  const float* xp = x.data<float>();
  const float* tp = t.data<float>();
  const cuda::HashGridLevels lc = hash_grid_levels(layout);
  const int d = layout.ndim;
  fk::parallel_for(0, n, 256, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      float* yi = yp + i * width;
      std::fill(yi, yi + width, 0.0f);  // inactive levels stay 0
      for_each_cell(d, xp + i * d, lc, level_weight,
                    [&](int l, const int64_t* row, const float* w, int count) {
                      // Sums in registers: a += into yi would chain every
                      // corner's add through a store and a reload.
                      float acc[16] = {};
                      for (int k = 0; k < count; ++k) {
                        const float* r = tp + row[k] * F;
                        for (int f = 0; f < F; ++f) acc[f] += w[k] * r[f];
                      }
                      std::copy(acc, acc + F, yi + l * F);
                    });
    }
  });
  if (fk::autograd::needs_grad(table)) {
    auto node = std::make_shared<HashGridBackward>();
    node->coords = x;
    node->layout = layout;
    node->level_weight = level_weight;
    fk::autograd::record(node, {table}, y);
  }
  return y;
}

HashGridField::HashGridField(const fk::Dims& shape, std::vector<HeadPtr> heads, HashGridConfig cfg,
                             uint64_t seed)
    : heads_(std::move(heads)), cfg_(cfg) {
  FK_CHECK(!heads_.empty(), "nefi::HashGridField", "at least one head", "none");
  FK_CHECK(cfg_.hidden >= 1 && cfg_.depth >= 1, "nefi::HashGridField", "hidden, depth >= 1",
           fk::to_text(cfg_.hidden) + ", " + fk::to_text(cfg_.depth));
  FK_CHECK(shape.size() >= 1, "nefi::HashGridField", "a 1-, 2- or 3-D grid", shape.str());
  layout_ = hash_grid_layout(shape.size(), cfg_, *std::max_element(shape.begin(), shape.end()));
  for (const HeadPtr& h : heads_) n_out_ += h->n_in();
  primary_ = heads_.front()->name();
  params_.add("table", {layout_.entries, cfg_.features});
  int in = cfg_.levels * cfg_.features;
  for (int i = 0; i < cfg_.depth; ++i) {
    params_.add("layer" + std::to_string(i) + ".weight", {cfg_.hidden, in});
    params_.add("layer" + std::to_string(i) + ".bias", {cfg_.hidden});
    in = cfg_.hidden;
  }
  params_.add("out.weight", {n_out_, cfg_.hidden});
  params_.add("out.bias", {n_out_});
  params_.allocate(fk::DType::F32);
  reset_parameters(seed);
}

void HashGridField::reset_parameters(uint64_t seed) {
  fk::Generator gen(seed);
  fk::autograd::NoGradGuard ng;
  fk::Tensor table = params_.raw(0);
  table.copy_(fk::uniform(table.shape(), -1e-4, 1e-4, {fk::DType::F32}, &gen));
  for (int i = 0; i <= cfg_.depth; ++i) {
    fk::Tensor w = params_.raw(1 + 2 * i), b = params_.raw(2 + 2 * i);
    const auto fan_in = static_cast<double>(w.size(1)), fan_out = static_cast<double>(w.size(0));
    const bool out = i == cfg_.depth;
    const double bound =
        out ? cfg_.out_init_scale * std::sqrt(6.0 / (fan_in + fan_out)) : std::sqrt(6.0 / fan_in);
    w.copy_(fk::uniform(w.shape(), -bound, bound, {fk::DType::F32}, &gen));
    if (out) {
      b.copy_(fk::from_vector(output_bias(heads_), fk::Dims{n_out_}));
    } else {
      fill_(b, 0.0);
    }
  }
  params_.flat().bump_version();
}

void HashGridField::to(fk::Device d) {
  fk::check_usable(d, "nefi::HashGridField::to");
  params_.to(d);
  if (d != device_) {
    points_.reset();
    level_weight_ = fk::Tensor();
    level_weight_values_.clear();
  }
  device_ = d;
}

const fk::Tensor& HashGridField::level_weight_on_device(double progress) {
  std::vector<float> w;
  for (double v : hash_grid_level_weights(cfg_.levels, progress, cfg_.annealed))
    w.push_back(static_cast<float>(v));
  if (!level_weight_.defined()) {
    level_weight_ = fk::from_vector(w, fk::Dims{cfg_.levels}, device_);
  } else if (w != level_weight_values_) {
    fk::autograd::NoGradGuard ng;
    level_weight_.copy_(fk::from_vector(w, fk::Dims{cfg_.levels}));
  }
  level_weight_values_ = std::move(w);
  return level_weight_;
}

bool HashGridField::retarget(double progress) {
  if (!device_.is_cuda() || !level_weight_.defined()) return false;
  level_weight_on_device(progress);
  return !heads_read_progress(heads_);
}

FieldMap HashGridField::forward(const Domain& domain, double progress) {
  FK_CHECK(domain.ndim() == layout_.ndim, "nefi::HashGridField",
           fk::to_text(layout_.ndim) + "-D domain", domain.str());
  FK_CHECK(params_.flat().device() == device_, "nefi::HashGridField",
           "parameters on " + device_.str() + " (where to() put them)",
           params_.flat().device().str());
  if (!coords_.defined() || !(coords_shape_ == domain.shape())) {
    coords_ = domain.coords(fk::DType::F32).reshape({domain.numel(), layout_.ndim}).contiguous();
    coords_shape_ = domain.shape();
    points_.reset();
  }
  const std::vector<fk::Tensor> p = params_.views();
  fk::Tensor h;
  if (device_.is_cuda()) {
    if (!points_) points_ = hash_grid_points(coords_, layout_, device_);
    h = hash_grid_encode_device(points_, p[0], layout_, level_weight_on_device(progress));
  } else {
    h = hash_grid_encode(coords_, p[0], layout_,
                         hash_grid_level_weights(cfg_.levels, progress, cfg_.annealed));
  }
  for (int i = 0; i < cfg_.depth; ++i)
    h = dense(h, p[1 + 2 * i], p[2 + 2 * i], DenseActivation::Relu);
  h = dense(h, p[1 + 2 * cfg_.depth], p[2 + 2 * cfg_.depth], DenseActivation::None);
  return apply_heads(heads_, h, domain.shape(), progress);
}

}  // namespace nefi
