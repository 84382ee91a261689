#include "minkowski/ops/elementwise.h"

#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/index.h"
#include "fk/ops/join.h"
#include "fk/profile.h"
#include "minkowski/ops/union.h"
#include "minkowski/tensor_field.h"

namespace minkowski {

namespace {

// Every input on the map of the first (same manager, same key).
void check_aligned(const std::vector<SparseTensor>& xs, const char* where) {
  FK_CHECK(!xs.empty(), where, "at least one sparse tensor", "none");
  for (size_t i = 1; i < xs.size(); ++i) {
    check_same_manager(xs[0], xs[i], where);
    FK_CHECK(xs[i].key() == xs[0].key(), where,
             "tensors on one coordinate map (input 0 is on " + xs[0].key().str() + ")",
             "input " + fk::to_text(i) + " on " + xs[i].key().str());
  }
}

// Every input on the points of the first (the same coordinate tensor, or
// equal coordinates).
void check_aligned(const std::vector<TensorField>& xs, const char* where) {
  FK_CHECK(!xs.empty(), where, "at least one field", "none");
  for (size_t i = 0; i < xs.size(); ++i)
    FK_CHECK(xs[i].defined(), where, "constructed fields",
             "an empty TensorField as input " + fk::to_text(i));
  const fk::Tensor& c0 = xs[0].C();
  for (size_t i = 1; i < xs.size(); ++i) {
    const fk::Tensor& c = xs[i].C();
    bool same = c.is_same(c0) || (c.shape() == c0.shape() && c.dtype() == c0.dtype() &&
                                  c.to_vector<double>() == c0.to_vector<double>());
    FK_CHECK(same, where,
             "fields on the same points (input 0: " + fk::to_text(xs[0].size()) + " points)",
             "input " + fk::to_text(i) + " on other coordinates");
  }
}

template <typename X>
void check_like(const X& a, const X& b, size_t i, const char* where) {
  FK_CHECK(b.channels() == a.channels(), where,
           fk::to_text(a.channels()) + " channels (as input 0)",
           fk::to_text(b.channels()) + " in input " + fk::to_text(i));
  FK_CHECK(b.F().dtype() == a.F().dtype(), where,
           std::string("features of one dtype (input 0: ") + fk::name(a.F().dtype()) + ")",
           std::string(fk::name(b.F().dtype())) + " in input " + fk::to_text(i));
}

template <typename X>
X cat_features(const std::vector<X>& xs) {
  const char* where = "minkowski::cat";
  check_aligned(xs, where);
  std::vector<fk::Tensor> fs;
  for (const auto& x : xs) fs.push_back(x.F());
  return xs[0].with_features(fk::cat(fs, 1));
}

template <typename X>
X sum_features(const std::vector<X>& xs, const char* where) {
  check_aligned(xs, where);
  fk::Tensor s = xs[0].F();
  for (size_t i = 1; i < xs.size(); ++i) {
    check_like(xs[0], xs[i], i, where);
    s = fk::add(s, xs[i].F());
  }
  return xs[0].with_features(s);
}

template <typename X>
X mean_features(const std::vector<X>& xs) {
  X s = sum_features(xs, "minkowski::mean");
  return s.with_features(fk::div(s.F(), static_cast<double>(xs.size())));
}

void check_op(fk::BinaryOp op, const char* where) {
  FK_CHECK(op == fk::BinaryOp::Add || op == fk::BinaryOp::Sub || op == fk::BinaryOp::Mul ||
               op == fk::BinaryOp::Div,
           where, "add, sub, mul or div", fk::name(op));
}

}  // namespace

SparseTensor cat(const std::vector<SparseTensor>& xs) {
  return cat_features(xs);
}
SparseTensor sum(const std::vector<SparseTensor>& xs) {
  return sum_features(xs, "minkowski::sum");
}
SparseTensor mean(const std::vector<SparseTensor>& xs) {
  return mean_features(xs);
}
TensorField cat(const std::vector<TensorField>& xs) {
  return cat_features(xs);
}
TensorField sum(const std::vector<TensorField>& xs) {
  return sum_features(xs, "minkowski::sum");
}
TensorField mean(const std::vector<TensorField>& xs) {
  return mean_features(xs);
}

SparseTensor binary(const SparseTensor& a, const SparseTensor& b, fk::BinaryOp op) {
  const char* where = "minkowski::binary";
  fk::profile::OpScope scope("minkowski.binary");
  check_op(op, where);
  check_same_manager(a, b, where);
  check_like(a, b, 1, where);
  if (a.key() == b.key()) return a.with_features(fk::binary(op, a.F(), b.F()));
  UnionMap u = union_map({a, b}, where);
  const int64_t m = u.size, c = a.channels();
  // indices and mask on the features' device (fk's ops run on either)
  const fk::Device dev = a.F().device();
  fk::Tensor zero = fk::zeros({m, c}, {a.F().dtype(), dev});
  // a on the union (0 where a has no row), then op at b's rows only; the
  // host-index forms check the rows on the host and upload them.
  fk::Tensor pa = fk::index_add(zero, 0, u.rows_of[0], a.F());
  // (the host-index select: no read back for its range check)
  fk::Tensor at_b = fk::binary(op, fk::index_select(pa, 0, u.rows_of[1]), b.F());
  std::vector<bool> in_b(static_cast<size_t>(m), false);
  for (int64_t r : u.rows_of[1]) in_b[r] = true;
  fk::Tensor mask = fk::from_vector(in_b, fk::Dims{m, 1}, dev);
  fk::Tensor out = fk::where(mask, fk::index_add(zero, 0, u.rows_of[1], at_b), pa);
  return SparseTensor(out, u.key, a.manager());
}

SparseTensor binary(const SparseTensor& a, const fk::Tensor& b, fk::BinaryOp op) {
  const char* where = "minkowski::binary";
  check_op(op, where);
  FK_CHECK(a.defined(), where, "a sparse tensor", "an empty handle");
  FK_CHECK(b.defined(), where, "a dense operand", "an undefined tensor");
  const int64_t c = a.channels();
  bool fits = b.dim() == 0 || (b.dim() == 1 && b.size(0) == c) ||
              (b.dim() == 2 && (b.size(0) == 1 || b.size(0) == a.size()) && b.size(1) == c);
  FK_CHECK(fits, where,
           "a dense operand of shape (), (" + fk::to_text(c) + "), (1, " + fk::to_text(c) +
               ") or (" + fk::to_text(a.size()) + ", " + fk::to_text(c) + ")",
           b.shape().str());
  return a.with_features(fk::binary(op, a.F(), b));
}

}  // namespace minkowski
