// A ParametricField's shapes on a CUDA device (field/parametric_device.h:
// one kernel forward, two backward, f64 arithmetic) beside the CPU op
// (field/parametric_field.h, fk's threads) on the same problem: forward and
// the gradient of sum(raw) into the shapes and background, on side x side
// points (2-D) with K shapes of one channel.
//   BM_DeviceParametric/family/side/count  ms per call, launches per call
//                        and shape-point evaluations per second (N K forward
//                        plus N K backward per call): the rate to read
//                        against the GPU's f64 FMA peak (an H100 SXM: ~34
//                        TFLOP/s without tensor cores; an ellipse is some 30
//                        f64 flops and an exp a shape-point each way, a
//                        degree-6 star some 400).
//   BM_CpuParametric/family/side/count     the same on the CPU op: the
//                        device's speed-up is the ratio of the two rows.
// family 0 blobs, 1 ellipses, 2 stars (degree 6), 3 polygons (6 vertices).
// Reproduce (on a GPU machine; scripts/gpu-check runs it):
//   cmake --build build/release --target nefi_cuda_bench &&
//   build/bin/nefi_cuda_bench --benchmark_filter=Parametric
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>
#include <vector>

#include "../cuda_event_timer.h"
#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/reduce.h"
#include "fk/profile.h"
#include "fk/random.h"
#include "nefi/cuda/parametric_cells.h"
#include "nefi/field/parametric_device.h"
#include "nefi/field/parametric_field.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/star_harmonics.h"

namespace {

using fk_bench::skip_without_device;

const char* const kFamilies[] = {"blobs", "ellipses", "stars", "polygons"};
constexpr int kDegree = 6, kVertices = 6;

struct Problem {
  std::string family;
  int degree = 0;
  fk::Tensor coords, shapes, background;
  std::vector<double> gates;
};

// K shapes scattered over the domain, each a tenth of it wide.
Problem problem(int family, int64_t side, int64_t K) {
  Problem p;
  p.family = kFamilies[family];
  p.degree = family == 2 ? kDegree : 0;
  const int vertices = family == 3 ? kVertices : 0;
  const int P = nefi::parametric_shape_size(2, p.degree, vertices);
  fk::Generator gen(3);
  std::vector<double> s =
      fk::uniform({1, K, P}, -0.8, 0.8, {fk::DType::F64}, &gen).to_vector<double>();
  for (int64_t k = 0; k < K; ++k) {
    double* q = s.data() + k * P;
    q[3] = q[6] = 10.0;  // M = 10 I
    q[4] = q[5] = 0.0;
    for (int j = 7; j < P; ++j)
      q[j] = 0.1 * q[j] + (vertices ? nefi::polygon_start_log_radius(vertices) : 0.0);
  }
  std::vector<double> x;
  for (int64_t i = 0; i < side; ++i)
    for (int64_t j = 0; j < side; ++j)
      for (int64_t v : {i, j}) x.push_back((2.0 * static_cast<double>(v) + 1.0) / side - 1.0);
  p.coords = fk::from_vector(x, fk::Dims{side * side, 2}).to(fk::DType::F32);
  p.shapes = fk::from_vector(s, fk::Dims{1, K, P}).to(fk::DType::F32);
  p.background = fk::zeros({1}, {fk::DType::F32});
  if (family == 2) {
    p.gates.assign(kDegree - nefi::kStarMinDegree + 1, 0.0);
    nefi::star_degree_gates(kDegree, 1.0, p.gates.data());
  }
  if (family == 3) p.gates = {1.0};
  return p;
}

void report(benchmark::State& state, double seconds, int64_t launches, int64_t evaluations) {
  const double iters = static_cast<double>(state.iterations());
  state.counters["ms/call"] = 1e3 * seconds / iters;
  state.counters["launches/call"] = static_cast<double>(launches) / iters;
  state.counters["Gshape-points/s"] =
      2.0 * static_cast<double>(evaluations) * iters / seconds / 1e9;
}

void BM_DeviceParametric(benchmark::State& state) {
  if (skip_without_device(state)) return;
  const int family = static_cast<int>(state.range(0));
  const Problem p = problem(family, state.range(1), state.range(2));
  const fk::Device gpu = fk::cuda_device(0);
  const fk::Tensor coords = p.coords.to(gpu);
  fk::Tensor shapes = p.shapes.to(gpu), background = p.background.to(gpu);
  shapes.set_requires_grad(true);
  background.set_requires_grad(true);
  std::vector<double> t(nefi::cuda::kShapeTunables, 0.0);
  t[0] = 0.5 / 0.05;
  for (size_t i = 0; i < p.gates.size(); ++i) t[1 + i] = p.gates[i];
  const fk::Tensor tunables = fk::from_vector(t, fk::Dims{nefi::cuda::kShapeTunables}, gpu);
  auto call = [&] {
    shapes.set_grad(fk::Tensor());
    background.set_grad(fk::Tensor());
    fk::sum(
        nefi::parametric_shapes_device(coords, shapes, background, p.family, p.degree, tunables))
        .backward();
  };
  call();
  fk_bench::EventTimer timer;
  const auto before = fk::profile::counters();
  double seconds = 0;
  for (auto _ : state) {
    const double s = timer.seconds(call);
    state.SetIterationTime(s);
    seconds += s;
  }
  report(state, seconds, fk::profile::counters().launches - before.launches,
         p.coords.size(0) * p.shapes.size(1));
  state.SetLabel(p.family + " on the device, forward+backward");
}

void BM_CpuParametric(benchmark::State& state) {
  const int family = static_cast<int>(state.range(0));
  const Problem p = problem(family, state.range(1), state.range(2));
  fk::Tensor shapes = p.shapes.clone(), background = p.background.clone();
  shapes.set_requires_grad(true);
  background.set_requires_grad(true);
  double seconds = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    shapes.set_grad(fk::Tensor());
    background.set_grad(fk::Tensor());
    fk::sum(nefi::parametric_shapes(p.coords, shapes, background, p.family, 0.05, p.gates))
        .backward();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.SetIterationTime(s);
    seconds += s;
  }
  report(state, seconds, 0, p.coords.size(0) * p.shapes.size(1));
  state.SetLabel(p.family + " on the CPU op, forward+backward");
}

// range(0) family; range(1) the domain's side; range(2) K shapes.
#define PARAMETRIC_ROWS(bm)                          \
  BENCHMARK(bm)                                      \
      ->ArgNames({"family", "side", "count"})        \
      ->ArgsProduct({{0, 1, 2, 3}, {64, 256}, {16}}) \
      ->UseManualTime()                              \
      ->Unit(benchmark::kMillisecond)
PARAMETRIC_ROWS(BM_DeviceParametric);
PARAMETRIC_ROWS(BM_CpuParametric);

}  // namespace
