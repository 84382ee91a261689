#include "fk/shape.h"

#include <algorithm>

#include "fk/error.h"

namespace fk {
namespace {
void check_rank(int64_t n) {
  FK_CHECK(n <= kMaxDims, "tensor rank", "at most " + fk::to_text(kMaxDims) + " dimensions",
           fk::to_text(n));
}
}  // namespace

Dims::Dims(std::initializer_list<int64_t> v) {
  check_rank(static_cast<int64_t>(v.size()));
  for (int64_t x : v) d_[n_++] = x;
}

Dims::Dims(const std::vector<int64_t>& v) {
  check_rank(static_cast<int64_t>(v.size()));
  for (int64_t x : v) d_[n_++] = x;
}

Dims::Dims(const int64_t* data, int n) {
  check_rank(n);
  for (int i = 0; i < n; ++i) d_[n_++] = data[i];
}

Dims Dims::filled(int n, int64_t value) {
  Dims d;
  d.resize(n, value);
  return d;
}

void Dims::push_back(int64_t v) {
  check_rank(n_ + 1);
  d_[n_++] = v;
}

void Dims::insert(int pos, int64_t v) {
  check_rank(n_ + 1);
  for (int i = n_; i > pos; --i) d_[i] = d_[i - 1];
  d_[pos] = v;
  ++n_;
}

void Dims::erase(int pos) {
  for (int i = pos; i + 1 < n_; ++i) d_[i] = d_[i + 1];
  --n_;
}

void Dims::resize(int n, int64_t fill) {
  check_rank(n);
  for (int i = n_; i < n; ++i) d_[i] = fill;
  n_ = n;
}

std::string Dims::str() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) {
    if (i) s += ", ";
    s += std::to_string(d_[i]);
  }
  return s + "]";
}

Dims contiguous_strides(const Dims& shape) {
  Dims s = shape;  // same rank; every entry is overwritten below
  int64_t acc = 1;
  for (int i = shape.size() - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

Dims broadcast_shapes(const Dims& a, const Dims& b, const char* where) {
  int n = std::max(a.size(), b.size());
  Dims out = Dims::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    int ia = a.size() - n + i, ib = b.size() - n + i;
    int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      throw Error(where, "shapes that broadcast", a.str() + " and " + b.str());
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int wrap_dim(int64_t dim, int ndim, const char* where) {
  int64_t n = std::max(ndim, 1);
  if (dim < -n || dim >= n) {
    throw Error(where, "a dimension in [" + fk::to_text(-n) + ", " + fk::to_text(n - 1) + "]",
                fk::to_text(dim));
  }
  return static_cast<int>(dim < 0 ? dim + n : dim);
}

}  // namespace fk
