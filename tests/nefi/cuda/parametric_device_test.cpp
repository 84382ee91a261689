// A ParametricField's shapes on a CUDA device (field/parametric_device.h):
// every family in every dimension it takes (blobs and ellipses 1-3-D, stars
// 2- and 3-D, polygons 2-D), in f32 and f64, gives the CPU op's values and
// gradients over several backward chunks (the same f64 arithmetic, so to
// round-off of the two machines' exp and sin; the same bits under the
// emulator), passes a gradcheck on the device, and the field on a device
// follows the CPU field while its tunables (edge width, outline gates) are
// rewritten in place; layered fields and shapes over layers follow the CPU
// fields too. Bad operands are refused by name. Skips without a
// device.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"
#include "fk/random.h"
#include "fk/test_util.h"
#include "fk/testing.h"
#include "nefi/cuda/device_test_util.h"
#include "nefi/cuda/parametric_cells.h"
#include "nefi/domain.h"
#include "nefi/field/heads.h"
#include "nefi/field/layered_field.h"
#include "nefi/field/parametric_device.h"
#include "nefi/field/parametric_field.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"
#include "nefi/solve/step_graph.h"

namespace {

using nefi::cuda_test::expect_close;
using nefi::cuda_test::host;
using nefi::cuda_test::kGpu;

struct Case {
  std::string family;
  int d, degree, vertices;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const std::string f : {"blobs", "ellipses"})
    for (int d = 1; d <= 3; ++d) out.push_back({f, d, 0, 0});
  out.push_back({"stars", 2, 7, 0});
  out.push_back({"stars", 3, 5, 0});
  out.push_back({"polygons", 2, 0, 5});
  return out;
}

// The CPU op's gates for a case: stars' degrees 3..L partly open, the
// polygons' one gate.
std::vector<double> gates_of(const Case& c) {
  if (c.family == "polygons") return {0.7};
  if (c.family != "stars") return {};
  std::vector<double> g(static_cast<size_t>(c.degree - nefi::kStarMinDegree + 1));
  nefi::star_degree_gates(c.degree, 0.6, g.data());
  return g;
}

// The device row of the same: 1 / (2 eps), then the gates.
fk::Tensor tunables_of(const Case& c, double eps) {
  std::vector<double> t(nefi::cuda::kShapeTunables, 0.0);
  t[0] = 0.5 / eps;
  const std::vector<double> g = gates_of(c);
  for (size_t i = 0; i < g.size(); ++i) t[1 + i] = g[i];
  return fk::from_vector(t, fk::Dims{nefi::cuda::kShapeTunables}, kGpu);
}

// Shapes well inside the domain and a few radii wide (2 channels, 3 shapes).
std::vector<double> shapes_of(const Case& c, uint64_t seed) {
  const int d = c.d, P = nefi::parametric_shape_size(d, c.degree, c.vertices);
  fk::Generator gen(seed);
  std::vector<double> v =
      fk::uniform({2, 3, P}, -0.5, 0.5, {fk::DType::F64}, &gen).to_vector<double>();
  for (int ck = 0; ck < 6; ++ck) {
    double* p = v.data() + ck * P;
    for (int a = 0; a < d; ++a) p[1 + d + a * d + a] += 2.5;
    for (int j = 1 + d + d * d; j < P; ++j) {
      p[j] *= 0.4;
      if (c.vertices > 0) p[j] += nefi::polygon_start_log_radius(c.vertices);
    }
  }
  return v;
}

TEST(NefiParametricDevice, EveryFamilyFollowsTheCpuOpBothWays) {
  NEFI_SKIP_WITHOUT_GPU();
  const double eps = 0.15;
  const int64_t n = 2 * nefi::cuda::kShapeChunk + 77;  // three backward chunks
  for (const Case& c : cases())
    for (const fk::DType dt : {fk::DType::F64, fk::DType::F32}) {
      SCOPED_TRACE(c.family + " " + std::to_string(c.d) + "-D " + fk::name(dt));
      fk::Generator gen(11 + c.d);
      const fk::Tensor coords = fk::uniform({n, c.d}, -1, 1, {dt}, &gen);
      const fk::Tensor w = fk::uniform({n, 2}, -1, 1, {dt}, &gen);
      const std::vector<double> sv = shapes_of(c, 5);
      const int P = nefi::parametric_shape_size(c.d, c.degree, c.vertices);
      std::vector<double> value[2], grad_s[2], grad_b[2];
      for (int on_gpu = 0; on_gpu < 2; ++on_gpu) {
        const fk::Device dev = on_gpu ? kGpu : fk::kCPU;
        fk::Tensor s = fk::from_vector(sv, {2, 3, P}).to(dt).to(dev);
        fk::Tensor b = fk::from_vector(std::vector<double>{0.25, -0.5}, {2}).to(dt).to(dev);
        s.set_requires_grad(true);
        b.set_requires_grad(true);
        const fk::Tensor raw =
            on_gpu ? nefi::parametric_shapes_device(coords.to(kGpu), s, b, c.family, c.degree,
                                                    tunables_of(c, eps))
                   : nefi::parametric_shapes(coords, s, b, c.family, eps, gates_of(c));
        ASSERT_EQ(raw.device(), dev);
        ASSERT_EQ(raw.dtype(), dt);
        ASSERT_EQ(raw.shape(), (fk::Dims{n, 2}));
        value[on_gpu] = host(raw);
        fk::sum(fk::mul(raw, w.to(dev))).backward();
        ASSERT_EQ(s.grad().device(), dev);
        grad_s[on_gpu] = host(s.grad());
        grad_b[on_gpu] = host(b.grad());
      }
      // f64: the machines' libms apart; f32: one rounding of nearly equal
      // f64 values (an ulp of the largest).
      const double tol = dt == fk::DType::F64 ? 1e-12 : 3e-7;
      expect_close(value[1], value[0], tol, "values");
      expect_close(grad_s[1], grad_s[0], tol, "the shapes' gradient");
      expect_close(grad_b[1], grad_b[0], tol, "the background's gradient");
      double moved = 0;  // the shapes reach the points: the comparison is not of zeros
      for (double g : grad_s[0]) moved = std::max(moved, std::fabs(g));
      EXPECT_GT(moved, 1.0);
    }
}

TEST(NefiParametricDevice, PassesAGradcheckOnTheDevice) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.family + " " + std::to_string(c.d) + "-D");
    fk::Generator gen(31 + c.d);
    const fk::Tensor coords = fk::uniform({40, c.d}, -1, 1, {fk::DType::F64}, &gen).to(kGpu);
    const int P = nefi::parametric_shape_size(c.d, c.degree, c.vertices);
    const fk::Tensor tunables = tunables_of(c, 0.3);
    EXPECT_EQ(fk::testing::gradcheck(
                  [&](const std::vector<fk::Tensor>& in) {
                    return nefi::parametric_shapes_device(coords, in[0], in[1], c.family, c.degree,
                                                          tunables);
                  },
                  {fk::from_vector(shapes_of(c, 9), {2, 3, P}).to(kGpu),
                   fk::from_vector(std::vector<double>{0.3, -0.2}, {2}).to(kGpu)}),
              "");
  }
}

// The field moved to the device gives the CPU field's values as progress
// moves, through retarget's in-place rewrite of its tunables: a captured
// forward replays with the rewritten edge width and gates.
TEST(NefiParametricDevice, TheFieldFollowsTheCpuFieldAsItAnneals) {
  NEFI_SKIP_WITHOUT_GPU();
  for (const Case& c : cases()) {
    if (c.family == "blobs" && c.d != 2) continue;
    SCOPED_TRACE(c.family + " " + std::to_string(c.d) + "-D");
    nefi::ParametricConfig cfg;
    cfg.family = c.family;
    cfg.count = 3;
    if (c.degree) cfg.harmonics = c.degree;
    if (c.vertices) cfg.vertices = c.vertices;
    const fk::Dims shape = c.d == 1   ? fk::Dims{40}
                           : c.d == 2 ? fk::Dims{20, 18}
                                      : fk::Dims{8, 9, 7};
    const std::vector<nefi::HeadPtr> heads{nefi::identity_head("x", 0.2)};
    nefi::ParametricField cpu(shape, heads, cfg, 3), gpu(shape, heads, cfg, 3);
    {  // amplitudes and outlines away from their start, so that the gates matter
      fk::autograd::NoGradGuard ng;
      fk::Tensor shapes = cpu.params().raw(0);
      const std::vector<double> sv = shapes_of(c, 21);
      std::vector<double> v = host(shapes);
      const size_t P = static_cast<size_t>(shapes.size(2));
      for (size_t i = 0; i < v.size(); ++i)
        if (i % P == 0 || i % P > static_cast<size_t>(c.d + c.d * c.d)) v[i] = sv[i];
      const fk::Tensor moved = fk::from_vector(v, shapes.shape()).to(fk::DType::F32);
      shapes.copy_(moved);
      gpu.params().raw(0).copy_(moved);
      cpu.params().flat().bump_version();
      gpu.params().flat().bump_version();
    }
    gpu.to(kGpu);
    const nefi::Domain domain(shape);
    EXPECT_FALSE(gpu.retarget(0.2));  // before the first forward: no row yet
    // The forward as a step a StepGraph runs: eager at 0.2, captured at
    // 0.45, replayed at 0.9. Only retarget's in-place rewrite reaches the
    // replay (the forward's own host code does not run in it).
    nefi::StepGraph graph(kGpu, "");
    fk::Tensor out = fk::empty({shape.numel()}, {fk::DType::F32, kGpu});
    double at = 0;
    auto step = [&] {
      fk::autograd::NoGradGuard ng;
      out.copy_(gpu.forward(domain, at).at("x").reshape({shape.numel()}));
    };
    for (double progress : {0.2, 0.45, 0.9}) {
      SCOPED_TRACE("progress " + std::to_string(progress));
      if (progress != 0.2) {
        EXPECT_TRUE(gpu.retarget(progress));
      }
      at = progress;
      graph.run(step, 0);
      EXPECT_EQ(graph.last_replayed(), progress == 0.9);
      expect_close(host(out), host(cpu.forward(domain, progress).at("x")), 3e-7, "x");
    }
    EXPECT_EQ(graph.captures(), 1) << graph.note();
  }
}

// A layered field, and ellipses over a layered background, on the device
// give the CPU field's values and gradients at progress below 0.1 (the
// interfaces held), while their modes open and at the end (TF32 off: the
// interfaces' bend is a matmul), in 2-D and 3-D.
TEST(NefiParametricDevice, LayeredFieldsFollowTheCpuFields) {
  NEFI_SKIP_WITHOUT_GPU();
  nefi::cuda_test::NoTf32 no_tf32;
  for (const fk::Dims& shape : {fk::Dims{20, 18}, fk::Dims{9, 8, 7}})
    for (const bool shapes : {false, true}) {
      SCOPED_TRACE(shape.str() + (shapes ? " layers+ellipses" : " layers"));
      const std::vector<nefi::HeadPtr> heads{nefi::identity_head("x", 0.2)};
      nefi::LayeredConfig lc;
      lc.layers = 3;
      lc.axis = 1;
      lc.modes = 2;
      std::unique_ptr<nefi::Field> f[2];
      for (int w = 0; w < 2; ++w) {
        if (shapes) {
          nefi::ParametricConfig pc;
          pc.family = "ellipses";
          pc.count = 2;
          pc.layers = lc;
          f[w] = std::make_unique<nefi::ParametricField>(shape, heads, pc, 4);
        } else {
          f[w] = std::make_unique<nefi::LayeredField>(shape, heads, lc);
        }
        // Jumps, depths and modes away from their flat start.
        fk::autograd::NoGradGuard ng;
        fk::Tensor& flat = f[w]->params().flat();
        fk::Generator gen(8);
        flat.copy_(fk::add(flat, fk::uniform(flat.shape(), -0.3, 0.3, {fk::DType::F32}, &gen)));
        flat.bump_version();
      }
      f[1]->to(kGpu);
      const nefi::Domain domain(shape);
      for (double progress : {0.05, 0.4, 1.0}) {
        SCOPED_TRACE("progress " + std::to_string(progress));
        std::vector<double> value[2], grad[2];
        for (int w = 0; w < 2; ++w) {
          f[w]->params().flat().set_grad(fk::Tensor());
          const fk::Tensor x = f[w]->forward(domain, progress).at("x");
          ASSERT_EQ(x.device(), w ? kGpu : fk::kCPU);
          value[w] = host(x);
          fk::Generator gen(9);
          const fk::Tensor wt =
              fk::uniform(x.shape(), -1, 1, {fk::DType::F32}, &gen).to(x.device());
          fk::sum(fk::mul(x, wt)).backward();
          grad[w] = host(f[w]->params().flat().grad());
        }
        expect_close(value[1], value[0], 1e-5, "x");
        expect_close(grad[1], grad[0], 1e-4, "the parameters' gradient");
      }
    }
}

TEST(NefiParametricDevice, BadOperandsAreRefusedByName) {
  NEFI_SKIP_WITHOUT_GPU();
  const Case star{"stars", 2, 5, 0};
  const int P = nefi::parametric_shape_size(2, 5);
  const fk::Tensor x = fk::zeros({4, 2}, {fk::DType::F32, kGpu});
  const fk::Tensor s = fk::zeros({1, 2, P}, {fk::DType::F32, kGpu});
  const fk::Tensor b = fk::zeros({1}, {fk::DType::F32, kGpu});
  const fk::Tensor t = tunables_of(star, 0.1);
  auto error = [&](const fk::Tensor& xx, const fk::Tensor& ss, const fk::Tensor& bb,
                   const fk::Tensor& tt, int degree) {
    return fk::test::error_of(
        [&] { (void)nefi::parametric_shapes_device(xx, ss, bb, "stars", degree, tt); });
  };
  EXPECT_EQ(error(x, s, b, t, 5), "");
  EXPECT_NE(error(x, s, b, t, 6)
                .find("shapes (C, K, " + std::to_string(nefi::parametric_shape_size(2, 6)) + ")"),
            std::string::npos);
  EXPECT_NE(error(x, s, b, t, 9).find("stars of an outline degree 3 to 8"), std::string::npos);
  EXPECT_NE(error(x.to(fk::kCPU), s, b, t, 5).find("on one device"), std::string::npos);
  EXPECT_NE(
      error(x.to(fk::kCPU), s.to(fk::kCPU), b.to(fk::kCPU), t, 5).find("tensors on a CUDA device"),
      std::string::npos);
  EXPECT_NE(error(x, s, b, t.to(fk::DType::F32), 5).find("f64 tunables"), std::string::npos);
  EXPECT_NE(error(x, s, b, fk::Tensor(), 5).find("got none"), std::string::npos);
  EXPECT_NE(error(x.to(fk::DType::F64), s, b, t, 5).find("one real dtype"), std::string::npos);
}

}  // namespace
