// The hash-grid field on a CUDA device (field/hash_grid_device.h): the
// encoding gives the CPU's bits forward, in 1-, 2- and 3-D with dense and
// hashed (colliding) levels, points outside the domain and a partly open
// annealing window; the table's gradient is the CPU's bits on every row of
// at most one chunk and within round-off of an f64 sum on the longer ones;
// the field's forward follows the CPU's, retarget() rewrites the window in
// place, and a field moved back to the CPU goes on there. Bad operands are
// refused by name. Skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce/sum.h"
#include "fk/test_util.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/field/hash_grid_device.h"
#include "nefi/field/hash_grid_field.h"
#include "nefi/field/heads.h"

namespace {

using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;
using nefi::cuda_test::NoTf32;

// n points: a regular grid's cell centres in (-1, 1) and a few outside (the clamp).
fk::Tensor points(int d, int64_t per_axis) {
  std::vector<float> x;
  int64_t n = 1;
  for (int a = 0; a < d; ++a) n *= per_axis;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t a = 0, r = i; a < d; ++a, r /= per_axis)
      x.push_back(static_cast<float>(-1.0 + (2.0 * static_cast<double>(r % per_axis) + 1.0) /
                                                static_cast<double>(per_axis)));
  for (float outside : {-1.25f, 1.5f})
    for (int a = 0; a < d; ++a) x.push_back(a == 0 ? outside : 0.3f);
  return fk::from_vector(x, fk::Dims{n + 2, d});
}

struct Case {
  int d;
  int64_t per_axis;
  nefi::HashGridConfig cfg;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int d = 1; d <= 3; ++d) {
    Case c{d, d == 1 ? 300 : d == 2 ? 40 : 12, {}};
    c.cfg.levels = 6;
    c.cfg.features = 3;
    c.cfg.log2_table = 7;  // the fine levels hash, with collisions
    c.cfg.base_resolution = 2;
    out.push_back(c);
  }
  return out;
}

// The table's gradient summed in f64 on the host (from the cells' f32
// weights, as both sides use them), with each value's sum of |terms| (the
// rounding bound of an f32 sum in any order) and each row's (point, vertex)
// count over every level.
struct Reference {
  std::vector<double> sum, abs;
  std::vector<int64_t> terms;
};

template <int D>
void add_point(const float* x, const nefi::cuda::HashGridLevels& L, const std::vector<float>& lw,
               const float* g, Reference& r) {
  const int F = L.features;
  for (int l = 0; l < L.count; ++l) {
    int64_t row[1 << D];
    float weight[1 << D];
    nefi::cuda::hash_grid_corners<D>(x, L.level[l], row, weight);
    for (int k = 0; k < (1 << D); ++k) {
      ++r.terms[row[k]];  // a closed level's rows are mapped too (the window is read later)
      if (lw[l] == 0.0f) continue;
      const float w = weight[k] * lw[l];
      for (int f = 0; f < F; ++f) {
        const double t = static_cast<double>(w) * g[l * F + f];
        r.sum[row[k] * F + f] += t;
        r.abs[row[k] * F + f] += std::fabs(t);
      }
    }
  }
}

Reference reference(const fk::Tensor& x, const nefi::HashGridLayout& layout,
                    const std::vector<float>& lw, const fk::Tensor& g) {
  const nefi::cuda::HashGridLevels L = nefi::hash_grid_levels(layout);
  Reference r;
  r.sum.assign(layout.entries * L.features, 0.0);
  r.abs = r.sum;
  r.terms.assign(layout.entries, 0);
  const std::vector<float> xs = x.to_vector<float>(), gs = g.to_vector<float>();
  const int64_t width = static_cast<int64_t>(L.count) * L.features;
  for (int64_t i = 0; i < x.size(0); ++i) {
    const float* xi = xs.data() + i * L.ndim;
    const float* gi = gs.data() + i * width;
    if (L.ndim == 1) add_point<1>(xi, L, lw, gi, r);
    if (L.ndim == 2) add_point<2>(xi, L, lw, gi, r);
    if (L.ndim == 3) add_point<3>(xi, L, lw, gi, r);
  }
  return r;
}

// Forward at a partly open window (progress 0.4 of 6 levels: weights 1, 1,
// 1, 0.4, 0, 0) and fully open, then the table's gradient.
TEST(NefiHashGridDevice, EncodeGivesTheCpuBitsAndItsGradientFollows) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::to_string(c.d) + "-D");
    const nefi::HashGridLayout L = nefi::hash_grid_layout(c.d, c.cfg, c.per_axis);
    ASSERT_TRUE(L.hashed(c.cfg.levels - 1));
    const fk::Tensor x = points(c.d, c.per_axis);
    const auto pts = nefi::hash_grid_points(x, L, kGpu);
    const std::vector<int64_t> start = pts->start.to(fk::kCPU).to_vector<int64_t>();
    const int F = c.cfg.features;
    for (double progress : {0.4, 1.0}) {
      SCOPED_TRACE("progress " + std::to_string(progress));
      const std::vector<double> lw = nefi::hash_grid_level_weights(c.cfg.levels, progress, true);
      std::vector<float> lw32;
      for (double v : lw) lw32.push_back(static_cast<float>(v));
      const fk::Tensor lw_device = fk::from_vector(lw32, fk::Dims{c.cfg.levels}, kGpu);
      fk::Tensor table = fk::test::random_tensor({L.entries, F}, fk::DType::F32, -1, 1, 5);
      table.set_requires_grad(true);
      fk::Tensor dtable = table.detach().to(kGpu);
      dtable.set_requires_grad(true);
      const fk::Tensor y = nefi::hash_grid_encode(x, table, L, lw);
      const fk::Tensor dy = nefi::hash_grid_encode_device(pts, dtable, L, lw_device);
      ASSERT_TRUE(dy.device() == kGpu);
      EXPECT_EQ(dy.to(fk::kCPU).to_vector<float>(), y.to_vector<float>());

      const fk::Tensor g = fk::test::random_tensor(y.shape(), fk::DType::F32, -1, 1, 6);
      y.backward(g);
      dy.backward(g.to(kGpu));
      const std::vector<float> want = table.grad().to_vector<float>();
      const std::vector<float> got = dtable.grad().to(fk::kCPU).to_vector<float>();
      const Reference ref = reference(x, L, lw32, g);
      ASSERT_EQ(got.size(), want.size());
      int64_t long_rows = 0;
      for (int64_t e = 0; e < L.entries; ++e) {
        const int64_t terms = start[e + 1] - start[e];
        // Every (point, level, vertex) is in its row's map.
        EXPECT_EQ(terms, ref.terms[e]) << "row " << e;
        long_rows += terms > nefi::cuda::kHashGridChunk ? 1 : 0;
        for (int f = 0; f < F; ++f) {
          const size_t k = static_cast<size_t>(e * F + f);
          const double bound = static_cast<double>(terms + 1) * 0x1p-24 * ref.abs[k];
          EXPECT_NEAR(got[k], ref.sum[k], bound) << "row " << e << " feature " << f;
          EXPECT_NEAR(want[k], ref.sum[k], bound) << "row " << e << " feature " << f;
          if (terms <= nefi::cuda::kHashGridChunk) {
            EXPECT_EQ(got[k], want[k]) << "row " << e << " feature " << f;
          }
        }
      }
      EXPECT_GT(long_rows, 0);  // coarse vertices are in many cells: chunked rows
      // Deterministic: a second backward gives the same bits.
      fk::Tensor again = table.detach().to(kGpu);
      again.set_requires_grad(true);
      nefi::hash_grid_encode_device(pts, again, L, lw_device).backward(g.to(kGpu));
      EXPECT_EQ(again.grad().to(fk::kCPU).to_vector<float>(), got);
    }
  }
}

nefi::HashGridField small_field() {
  nefi::HashGridConfig cfg;
  cfg.levels = 5;
  cfg.log2_table = 8;
  cfg.hidden = 16;
  return nefi::HashGridField(fk::Dims{20, 24}, {nefi::make_head("identity", "x", 0.5)}, cfg, 3);
}

TEST(NefiHashGridDevice, TheFieldFollowsTheCpuAndRetargetsItsWindowInPlace) {
  NEFI_SKIP_WITHOUT_GPU();
  NoTf32 no_tf32;
  const nefi::Domain domain(fk::Dims{20, 24}, {1.0, 1.0});
  nefi::HashGridField cpu = small_field(), gpu = small_field();
  EXPECT_FALSE(gpu.retarget(0.3));  // nothing on a device yet
  gpu.to(kGpu);
  EXPECT_FALSE(gpu.retarget(0.3));  // no forward yet: no window to rewrite
  const fk::Tensor first = gpu.forward(domain, 0.3).at("x");
  ASSERT_TRUE(first.device() == kGpu);
  for (double p : {0.3, 0.55, 0.8, 1.0}) {
    SCOPED_TRACE(p);
    ASSERT_TRUE(gpu.retarget(p));
    // The row the kernels read holds p's window before any forward at p.
    std::vector<double> window;
    for (double w : nefi::hash_grid_level_weights(5, p, true))
      window.push_back(static_cast<float>(w));
    EXPECT_EQ(host(gpu.window()), window);
    const std::vector<double> want = host(cpu.forward(domain, p).at("x"));
    nefi::cuda_test::expect_close(host(gpu.forward(domain, p).at("x")), want, 1e-5, "field");
  }
  EXPECT_NE(host(first), host(gpu.forward(domain, 1.0).at("x")));
  // The parameters' gradient of sum(x r), r fixed random weights: the
  // encoding's bits, the MLP's products and sums in cuBLAS's order.
  const fk::Tensor r = fk::test::random_tensor(domain.shape(), fk::DType::F32, -1, 1, 8);
  auto gradient = [&](nefi::HashGridField& f) {
    f.params().flat().set_grad(fk::Tensor());
    const fk::Tensor x = f.forward(domain, 0.55).at("x");
    fk::sum(fk::mul(x, r.to(x.device()))).backward();
    return host(f.params().flat().grad());
  };
  ASSERT_TRUE(gpu.retarget(0.55));
  nefi::cuda_test::expect_close(gradient(gpu), gradient(cpu), 1e-5, "gradient");
  // Back on the CPU the field runs there (its points dropped).
  gpu.to(fk::kCPU);
  EXPECT_FALSE(gpu.retarget(0.5));
  EXPECT_EQ(host(gpu.forward(domain, 0.5).at("x")), host(cpu.forward(domain, 0.5).at("x")));
}

TEST(NefiHashGridDevice, BadOperandsAreRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::HashGridConfig cfg;
  cfg.levels = 3;
  const nefi::HashGridLayout L = nefi::hash_grid_layout(2, cfg, 8);
  const auto pts = nefi::hash_grid_points(points(2, 8), L, kGpu);
  const fk::Tensor lw = fk::ones({3}, {fk::DType::F32, kGpu});
  const fk::Tensor table = fk::zeros({L.entries, cfg.features}, {fk::DType::F32, kGpu});
  auto err = [](auto f) { return fk::test::error_of(f); };
  std::string e = err([&] { (void)nefi::hash_grid_encode_device(pts, table.to(fk::kCPU), L, lw); });
  EXPECT_NE(e.find("an f32 table"), std::string::npos) << e;
  e = err([&] { (void)nefi::hash_grid_encode_device(pts, table, L, lw.to(fk::kCPU)); });
  EXPECT_NE(e.find("3 f32 level weights on cuda:0"), std::string::npos) << e;
  e = err([&] {
    (void)nefi::hash_grid_encode_device(pts, table, nefi::hash_grid_layout(3, cfg, 8), lw);
  });
  EXPECT_NE(e.find("points mapped for this layout"), std::string::npos) << e;
  e = err([&] { (void)nefi::hash_grid_points(points(2, 8).to(kGpu), L, kGpu); });
  EXPECT_NE(e.find("f32 host coordinates"), std::string::npos) << e;
}

}  // namespace
