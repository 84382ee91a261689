// nefi field representations: one training step's field work (forward
// through the heads, backward to the flat parameters) on a 64 x 64 grid,
// run at one thread beside BM_StreamTriad (heat_bench.cpp, same binary):
//   BM_FieldStep/kind   0 neural (6 octaves, 128 x 4 tanh, from_forward's
//                       network at 4096 cells), 1 hash grid (12 levels x 2
//                       features, 64 x 2 ReLU), 2 low rank (rank 8),
//                       3 grid, 4 spectral (every mode: a DCT-III forward,
//                       a DCT-II backward). Compare their times in one run.
//   BM_HashGridEncode/p the encoding alone, p 0 forward, 1 backward; GB/s
//                       counts the table rows gathered (2^d per level and
//                       point, F floats) and the encoding written, against
//                       the triad's bandwidth.
#include <benchmark/benchmark.h>

#include <memory>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/ops/binary/binary.h"
#include "fk/ops/reduce/sum.h"
#include "fk/parallel.h"
#include "fk/random.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/hash_grid_field.h"
#include "nefi/field/low_rank_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/field/spectral_field.h"

namespace {

constexpr int64_t kN = 64;

std::shared_ptr<nefi::Field> make_field(int64_t kind) {
  const fk::Dims shape{kN, kN};
  const std::vector<nefi::HeadPtr> heads{nefi::identity_head("x", 0.5)};
  if (kind == 0) {
    nefi::NeuralFieldConfig c;
    c.hidden = 128;
    c.depth = 4;
    c.skip_at = 2;
    c.n_octaves = 6;
    return std::make_shared<nefi::NeuralField>(2, heads, c, 0);
  }
  if (kind == 1) return std::make_shared<nefi::HashGridField>(shape, heads);
  if (kind == 2) return std::make_shared<nefi::LowRankField>(shape, heads, 8);
  if (kind == 4) return std::make_shared<nefi::SpectralField>(nefi::Domain(shape), heads);
  return std::make_shared<nefi::GridField>(shape, heads);
}

void BM_FieldStep(benchmark::State& state) {
  fk::set_num_threads(1);
  const auto field = make_field(state.range(0));
  const nefi::Domain domain({kN, kN});
  for (auto _ : state) {
    field->params().flat().set_grad(fk::Tensor());
    const fk::Tensor x = field->forward(domain, 1.0).at("x");
    fk::sum(fk::mul(x, x)).backward();
    benchmark::DoNotOptimize(field->params().flat().grad().data_ptr());
  }
  state.counters["parameters"] = static_cast<double>(field->n_parameters());
  state.SetLabel(field->kind());
}
BENCHMARK(BM_FieldStep)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

void BM_HashGridEncode(benchmark::State& state) {
  fk::set_num_threads(1);
  nefi::HashGridConfig c;
  const auto layout = nefi::hash_grid_layout(2, c, kN);
  fk::Tensor table = fk::uniform({layout.entries, c.features}, -1, 1);
  table.set_requires_grad(true);
  const fk::Tensor coords = nefi::Domain({kN, kN}).coords().reshape({kN * kN, 2});
  const std::vector<double> weights(c.levels, 1.0);
  const bool backward = state.range(0) == 1;
  for (auto _ : state) {
    const fk::Tensor y = nefi::hash_grid_encode(coords, table, layout, weights);
    if (backward) benchmark::DoNotOptimize(fk::autograd::grad({y}, {fk::ones_like(y)}, {table}));
    benchmark::DoNotOptimize(y.data_ptr());
  }
  // Per point and level: 4 corner rows of F floats read (forward; written in
  // the backward), F floats of encoding; the backward adds the zeroed table.
  const double per_pass = static_cast<double>(kN * kN) * c.levels * (4 + 1) * c.features * 4.0;
  const double bytes = backward ? 2 * per_pass + layout.entries * c.features * 4.0 : per_pass;
  state.counters["GB/s"] =
      benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_HashGridEncode)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
