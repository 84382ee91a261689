#include "bench_ops_cases.h"

#include <algorithm>

namespace minkowski_app::ops_bench {

namespace {

using namespace minkowski;

constexpr double kEps = 1e-5;

// N x C in and out, norm statistics over `seg`: forward reads x (stats and
// normalization count once) and writes y; backward reads the gradient and x
// and writes x's gradient; both walk the segment labels (4 bytes a row).
void add_norm(const Fixture& fx, std::vector<Case>& cases, const std::string& name, Segments s) {
  auto seg = std::make_shared<const Segments>(std::move(s));
  const double feat = static_cast<double>(fx.rows * fx.channels) * fx.elem,
               labels = static_cast<double>(fx.rows) * 4;
  fk::Tensor w = fk::ones({fx.channels}, {fx.dtype}), b = fk::zeros({fx.channels}, {fx.dtype});
  auto stats = std::make_shared<const NormStats>(normalize_statistics(fx.f, *seg, kEps));
  cases.push_back({name, "forward", 2 * feat + labels, [&fx, seg, w, b] {
                     normalize_forward(fx.f, *seg, normalize_statistics(fx.f, *seg, kEps), w, b);
                   }});
  cases.push_back({name, "backward", 3 * feat + labels, [&fx, seg, stats, w] {
                     normalize_backward(fx.gf, fx.f, *seg, *stats, w, true, true, true, true);
                   }});
}

// Every other row (by a hash of the row, so not a stride pattern) kept.
std::vector<int64_t> half_of_rows(int64_t n) {
  std::vector<int64_t> kept;
  uint64_t s = 0x2545F4914F6CDD1Dull;
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    if (s & 1) kept.push_back(i);
  }
  return kept;
}

// Pruning's features: an index_select of the kept rows and, backward, their
// gradient added into zeros (every row of x written). Index: 8 bytes a kept row.
void add_prune(const Fixture& fx, std::vector<Case>& cases) {
  const std::vector<int64_t> kept = half_of_rows(fx.rows);
  const int64_t k = static_cast<int64_t>(kept.size()), c = fx.channels;
  fk::Tensor idx = fk::from_vector(kept, fk::Dims{k});
  fk::Tensor g = random_uniform({k, c}, 7, fx.dtype);
  const double kb = static_cast<double>(k * c) * fx.elem, index = static_cast<double>(k) * 8;
  const double nb = static_cast<double>(fx.rows * c) * fx.elem;
  cases.push_back(
      {"prune 1/2", "forward", 2 * kb + index, [&fx, idx] { fk::index_select(fx.f, 0, idx); }});
  cases.push_back({"prune 1/2", "backward", kb + nb + index, [&fx, idx, g] {
                     fk::index_select_backward(g, fk::Dims{fx.rows, fx.channels}, 0, idx);
                   }});
}

// The scene's coordinates with every other row dropped and x shifted by one:
// a second map of the manager, overlapping the scene's at about half its rows.
MapKey shifted_half(const Fixture& fx) {
  fk::Tensor coords = fx.mgr->coordinates(fx.fine);
  const int32_t* p = coords.data<int32_t>();
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < fx.rows; i += 2)
    rows.insert(rows.end(), {p[4 * i], p[4 * i + 1] + 1, p[4 * i + 2], p[4 * i + 3]});
  const int64_t n = static_cast<int64_t>(rows.size() / 4);
  return fx.mgr->insert(fk::from_vector(rows, fk::Dims{n, 4}), {1}, "bench_shifted").key;
}

// Union's features: the inputs concatenated and added into zeros at their
// union rows; backward, the gradient's rows of each input row. Index: 8
// bytes per input row.
void add_union(const Fixture& fx, std::vector<Case>& cases) {
  const MapKey other = shifted_half(fx);
  const int64_t n2 = fx.mgr->size(other), c = fx.channels, n = fx.rows + n2;
  fk::Tensor f2 = random_uniform({n2, c}, 8, fx.dtype);
  const UnionMap u = union_map(
      {SparseTensor(fx.f, fx.fine, fx.mgr), SparseTensor(f2, other, fx.mgr)}, "bench ops");
  std::vector<int64_t> rows = u.rows_of[0];
  rows.insert(rows.end(), u.rows_of[1].begin(), u.rows_of[1].end());
  fk::Tensor idx = fk::from_vector(rows, fk::Dims{n});
  fk::Tensor g = random_uniform({u.size, c}, 9, fx.dtype);
  const double bytes = static_cast<double>((n + u.size) * c) * fx.elem + static_cast<double>(n) * 8;
  const int64_t out_rows = u.size;
  cases.push_back({"union +half", "forward", bytes, [&fx, idx, f2, out_rows] {
                     fk::index_add(fk::zeros({out_rows, fx.channels}, {fx.dtype}), 0, idx,
                                   fk::cat({fx.f, f2}, 0));
                   }});
  cases.push_back({"union +half", "backward", bytes, [&fx, idx, g, n] {
                     fk::index_add_src_backward(g, 0, idx, fk::Dims{n, fx.channels}, fx.dtype);
                   }});
}

// spmm of a coordinate list with x's features, forward and (w.r.t. the dense
// operand) backward: K x C read, M x C written, the list's rows, columns
// (8 bytes each) and values read.
void add_spmm(const Fixture& fx, std::vector<Case>& cases, const std::string& name,
              std::shared_ptr<const CooList> a, fk::Tensor values, const fk::Tensor& grad) {
  const double c = static_cast<double>(fx.channels);
  const double bytes = static_cast<double>(a->m + a->k) * c * fx.elem +
                       static_cast<double>(a->rows.size()) *
                           (16 + static_cast<double>(fk::itemsize(values.dtype())));
  cases.push_back({name, "forward", bytes, [&fx, a, values] { spmm_forward(*a, values, fx.f); }});
  cases.push_back({name, "backward", bytes,
                   [&fx, a, values, grad] { spmm_backward(grad, *a, values, fx.f, false, true); }});
}

// Voxel centres moved by up to a quarter voxel on each axis: every point has
// 8 corners, those present in the scene weighted.
fk::Tensor jittered_centres(const Fixture& fx) {
  fk::Tensor coords = fx.mgr->coordinates(fx.fine);
  const int32_t* p = coords.data<int32_t>();
  fk::Tensor pts = random_uniform({fx.rows, 4}, 10, fk::DType::F32);
  float* q = pts.data<float>();
  for (int64_t i = 0; i < fx.rows * 4; ++i)
    q[i] = i % 4 == 0 ? static_cast<float>(p[i]) : static_cast<float>(p[i]) + 0.5f + q[i] / 4;
  return pts;
}

void add_interpolation_and_spmm(const Fixture& fx, std::vector<Case>& cases) {
  const fk::DType vd = fx.dtype == fk::DType::F64 ? fk::DType::F64 : fk::DType::F32;
  InterpolationWeights w = interpolation_weights(
      SparseTensor(fx.f, fx.fine, fx.mgr), jittered_centres(fx), InterpolationMode::Multilinear);
  fk::Tensor wv = fk::from_vector(w.weight).to(vd);
  add_spmm(fx, cases, "interpolate", std::make_shared<const CooList>(std::move(w.list)), wv, fx.gf);
  // The k3 map's pairs as a coarse x fine matrix of ones: sum pooling by spmm.
  const KernelMap& m = *fx.k3;
  std::vector<int64_t> rows(m.out_rows.begin(), m.out_rows.end()),
      cols(m.in_rows.begin(), m.in_rows.end());
  auto a = std::make_shared<const CooList>(
      coo_list(std::move(rows), std::move(cols), {fx.coarse_rows, fx.rows}));
  fk::Tensor ones = fk::ones({m.pairs()}, {vd});
  add_spmm(fx, cases, "spmm k3 s2", a, ones, fx.gc);
}

}  // namespace

void add_norm_and_relu_cases(const Fixture& fx, std::vector<Case>& cases) {
  add_norm(fx, cases, "batch_norm train", single_segment(fx.rows));
  add_norm(fx, cases, "instance_norm", batch_segments(SparseTensor(fx.f, fx.fine, fx.mgr)));
  const double feat = static_cast<double>(fx.rows * fx.channels) * fx.elem;
  fk::Tensor out = fk::unary_forward(fk::UnaryOp::Relu, fx.f);
  cases.push_back(
      {"relu", "forward", 2 * feat, [&fx] { fk::unary_forward(fk::UnaryOp::Relu, fx.f); }});
  cases.push_back({"relu", "backward", 3 * feat,
                   [&fx, out] { fk::unary_backward(fk::UnaryOp::Relu, fx.gf, fx.f, out); }});
}

void add_indexed_cases(const Fixture& fx, std::vector<Case>& cases) {
  add_prune(fx, cases);
  add_union(fx, cases);
  add_interpolation_and_spmm(fx, cases);
}

}  // namespace minkowski_app::ops_bench
