#include "minkowski/ops/elementwise.h"

#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/index.h"
#include "fk/ops/join.h"
#include "fk/profile.h"
#include "minkowski/ops/union.h"

namespace minkowski {

namespace {

// Every input on the map of the first (same manager, same key).
void check_one_map(const std::vector<SparseTensor>& xs, const char* where) {
  FK_CHECK(!xs.empty(), where, "at least one sparse tensor", "none");
  for (size_t i = 1; i < xs.size(); ++i) {
    check_same_manager(xs[0], xs[i], where);
    FK_CHECK(xs[i].key() == xs[0].key(), where,
             "tensors on one coordinate map (input 0 is on " + xs[0].key().str() + ")",
             "input " + std::to_string(i) + " on " + xs[i].key().str());
  }
}

void check_like(const SparseTensor& a, const SparseTensor& b, size_t i, const char* where) {
  FK_CHECK(b.channels() == a.channels(), where,
           std::to_string(a.channels()) + " channels (as input 0)",
           std::to_string(b.channels()) + " in input " + std::to_string(i));
  FK_CHECK(b.F().dtype() == a.F().dtype(), where,
           std::string("features of one dtype (input 0: ") + fk::name(a.F().dtype()) + ")",
           std::string(fk::name(b.F().dtype())) + " in input " + std::to_string(i));
}

void check_op(fk::BinaryOp op, const char* where) {
  FK_CHECK(op == fk::BinaryOp::Add || op == fk::BinaryOp::Sub || op == fk::BinaryOp::Mul ||
               op == fk::BinaryOp::Div,
           where, "add, sub, mul or div", fk::name(op));
}

fk::Tensor index_tensor(const std::vector<int64_t>& v) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())});
}

}  // namespace

SparseTensor cat(const std::vector<SparseTensor>& xs) {
  const char* where = "minkowski::cat";
  check_one_map(xs, where);
  std::vector<fk::Tensor> fs;
  for (const auto& x : xs) fs.push_back(x.F());
  return xs[0].with_features(fk::cat(fs, 1));
}

SparseTensor sum(const std::vector<SparseTensor>& xs) {
  const char* where = "minkowski::sum";
  check_one_map(xs, where);
  fk::Tensor s = xs[0].F();
  for (size_t i = 1; i < xs.size(); ++i) {
    check_like(xs[0], xs[i], i, where);
    s = fk::add(s, xs[i].F());
  }
  return xs[0].with_features(s);
}

SparseTensor mean(const std::vector<SparseTensor>& xs) {
  SparseTensor s = sum(xs);
  return s.with_features(fk::div(s.F(), static_cast<double>(xs.size())));
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
  fk::Tensor ra = index_tensor(u.rows_of[0]), rb = index_tensor(u.rows_of[1]);
  fk::Tensor zero = fk::zeros({m, c}, {a.F().dtype()});
  // a on the union (0 where a has no row), then op at b's rows only.
  fk::Tensor pa = fk::index_add(zero, 0, ra, a.F());
  fk::Tensor at_b = fk::binary(op, fk::index_select(pa, 0, rb), b.F());
  std::vector<bool> in_b(static_cast<size_t>(m), false);
  for (int64_t r : u.rows_of[1]) in_b[r] = true;
  fk::Tensor mask = fk::from_vector(in_b, fk::Dims{m, 1});
  fk::Tensor out = fk::where(mask, fk::index_add(zero, 0, rb, at_b), pa);
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
           "a dense operand of shape (), (" + std::to_string(c) + "), (1, " + std::to_string(c) +
               ") or (" + std::to_string(a.size()) + ", " + std::to_string(c) + ")",
           b.shape().str());
  return a.with_features(fk::binary(op, a.F(), b));
}

}  // namespace minkowski
