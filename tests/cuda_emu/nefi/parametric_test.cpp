// parametric.cu's kernels run on the emulated device (emulated_device.h):
// the forward and the shapes' and background's gradients against
// nefi::parametric_shapes (the CPU op) bit for bit, for the largest shapes
// a kernel's local row holds (3-D stars of degree 8, 85 entries; polygons
// of 16 vertices) and for blobs in 1-D, over points that span chunks and
// sub-chunks (a last one short), f32 and f64, in both thread orders.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cuda_emu/emulated_device.h"
#include "cuda_emu/emulated_test_util.h"
#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "nefi/cuda/parametric_kernels.h"
#include "nefi/field/parametric_field.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"

// The emulated launchers this file runs: parametric_kernels.h's, in ::emu
// (a signature that drifts from its definition fails to link).
namespace nefi::cuda::emu {
void launch_parametric_forward(const ShapeProfile& profile, const ShapeLayout& layout,
                               const float* coords, const float* shapes, const float* background,
                               const double* tunables, float* y, void* stream);
void launch_parametric_forward(const ShapeProfile& profile, const ShapeLayout& layout,
                               const double* coords, const double* shapes, const double* background,
                               const double* tunables, double* y, void* stream);
void launch_parametric_backward(const ShapeProfile& profile, const ShapeLayout& layout,
                                const float* coords, const float* shapes, const double* tunables,
                                const float* go, double* partial, float* grad_shapes,
                                float* grad_background, void* stream);
void launch_parametric_backward(const ShapeProfile& profile, const ShapeLayout& layout,
                                const double* coords, const double* shapes, const double* tunables,
                                const double* go, double* partial, double* grad_shapes,
                                double* grad_background, void* stream);
}  // namespace nefi::cuda::emu

namespace nc = nefi::cuda;
using fkemu_test::expect_same_bits;
using fkemu_test::in_both_orders;
using fkemu_test::random_values;

namespace {

struct Case {
  std::string family;
  int d, degree, vertices;
};

template <typename T>
std::vector<T> values_of(const fk::Tensor& t) {
  return t.detach().contiguous().to_vector<T>();
}

template <typename T>
void check(const Case& c) {
  SCOPED_TRACE(c.family + " " + std::to_string(c.d) + "-D " + (sizeof(T) == 4 ? "f32" : "f64"));
  const int64_t n = 2 * nc::kShapeChunk + 300, C = 2, K = 3;
  const int P = nefi::parametric_shape_size(c.d, c.degree, c.vertices);
  ASSERT_LE(P, nc::kShapeMaxEntries);
  std::mt19937 rng(17);
  const std::vector<T> x = random_values<T>(n * c.d, -1, 1, rng);
  std::vector<T> s = random_values<T>(C * K * P, -0.5, 0.5, rng);
  for (int64_t ck = 0; ck < C * K; ++ck)
    for (int a = 0; a < c.d; ++a) s[static_cast<size_t>(ck * P + 1 + c.d + a * c.d + a)] += 2.5f;
  if (c.vertices)
    for (int64_t ck = 0; ck < C * K; ++ck)
      for (int j = 1 + c.d + c.d * c.d; j < P; ++j)
        s[static_cast<size_t>(ck * P + j)] +=
            static_cast<T>(nefi::polygon_start_log_radius(c.vertices));
  const std::vector<T> b = {T(0.25), T(-0.5)};
  const std::vector<T> go = random_values<T>(n * C, -1, 1, rng);
  const double eps = 0.15;
  std::vector<double> gates;
  if (c.degree) {
    gates.assign(static_cast<size_t>(c.degree - nefi::kStarMinDegree + 1), 0.0);
    nefi::star_degree_gates(c.degree, 0.7, gates.data());
  }
  if (c.vertices) gates = {0.8};

  // The CPU op: values, then the gradients of sum(go * y).
  fk::Tensor ts = fk::from_vector(s, {C, K, P}), tb = fk::from_vector(b, {C});
  ts.set_requires_grad(true);
  tb.set_requires_grad(true);
  const fk::Tensor y =
      nefi::parametric_shapes(fk::from_vector(x, {n, c.d}), ts, tb, c.family, eps, gates);
  fk::sum(fk::mul(y, fk::from_vector(go, {n, C}))).backward();
  const std::vector<T> want_y = values_of<T>(y), want_s = values_of<T>(ts.grad()),
                       want_b = values_of<T>(tb.grad());

  nc::ShapeProfile profile;
  profile.ellipse = c.family != "blobs";
  profile.degree = c.degree;
  profile.vertices = c.vertices;
  std::vector<double> tunables(nc::kShapeTunables, 0.0);
  tunables[0] = 0.5 / eps;
  for (size_t i = 0; i < gates.size(); ++i) tunables[1 + i] = gates[i];
  nc::ShapeLayout L;
  L.d = c.d;
  L.P = P;
  L.n = n;
  L.C = C;
  L.K = K;
  L.sub = nc::shape_sub_chunk(n, L.row());
  ASSERT_EQ(L.sub, nc::kShapeSubChunk);
  ASSERT_EQ(L.subs(), 2 * nc::kShapeChunk / nc::kShapeSubChunk + 2);  // the last one short
  in_both_orders([&](fkemu::Order) {
    std::vector<T> got_y(want_y.size(), T(-7));
    nc::emu::launch_parametric_forward(profile, L, x.data(), s.data(), b.data(), tunables.data(),
                                       got_y.data(), nullptr);
    expect_same_bits(got_y, want_y, C, "values");
    std::vector<double> partial(static_cast<size_t>(L.subs() * L.row()), -7.0);
    std::vector<T> got_s(want_s.size(), T(-7)), got_b(want_b.size(), T(-7));
    nc::emu::launch_parametric_backward(profile, L, x.data(), s.data(), tunables.data(), go.data(),
                                        partial.data(), got_s.data(), got_b.data(), nullptr);
    expect_same_bits(got_s, want_s, P, "the shapes' gradient");
    expect_same_bits(got_b, want_b, "the background's gradient");
  });
}

TEST(EmulatedParametric, ValuesAndGradientsEqualTheCpuOp) {
  for (const Case& c : {Case{"stars", 3, 8, 0}, Case{"polygons", 2, 0, 16},
                        Case{"ellipses", 2, 0, 0}, Case{"blobs", 1, 0, 0}}) {
    check<float>(c);
    check<double>(c);
  }
}

// The sub-chunk rule: 256 points, or whole chunks where the rows of
// sub-chunk partials would pass 512 MB (a 128^3 grid of 256 3-D stars of
// degree 8).
TEST(EmulatedParametric, SubChunksShrinkTheirRowsOrGiveWay) {
  const int64_t grid = 128 * 128 * 128;
  EXPECT_EQ(nc::shape_sub_chunk(grid, 16 * 13 + 1), nc::kShapeSubChunk);
  EXPECT_EQ(nc::shape_sub_chunk(grid, 256 * 85 + 1), nc::kShapeChunk);
  EXPECT_EQ(nc::shape_sub_chunk(0, 256 * 85 + 1), nc::kShapeSubChunk);
}

}  // namespace
