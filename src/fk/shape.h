#pragma once
// Dims: a small fixed-capacity vector of int64 used for shapes and strides.
// Tensors have at most kMaxDims dimensions; no heap allocation per tensor.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace fk {

inline constexpr int kMaxDims = 8;

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v);
  explicit Dims(const std::vector<int64_t>& v);
  Dims(const int64_t* data, int n);
  static Dims filled(int n, int64_t value);

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* data() const { return d_; }
  int64_t* data() { return d_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t back() const { return d_[n_ - 1]; }
  void push_back(int64_t v);
  void insert(int pos, int64_t v);
  void erase(int pos);
  void resize(int n, int64_t fill = 0);
  std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

  int64_t numel() const {
    int64_t p = 1;
    for (int i = 0; i < n_; ++i) p *= d_[i];
    return p;
  }
  bool operator==(const Dims& o) const {
    if (n_ != o.n_) return false;
    for (int i = 0; i < n_; ++i) {
      if (d_[i] != o.d_[i]) return false;
    }
    return true;
  }
  bool operator!=(const Dims& o) const { return !(*this == o); }
  std::string str() const;  // "[2, 3]"

 private:
  int64_t d_[kMaxDims];  // only the first n_ are meaningful
  int n_ = 0;
};

// Product of shape[begin..end) (the element count of a block of dimensions).
inline int64_t numel_between(const Dims& shape, int begin, int end) {
  int64_t p = 1;
  for (int i = begin; i < end; ++i) p *= shape[i];
  return p;
}
// Row-major (C-contiguous) strides for a shape.
Dims contiguous_strides(const Dims& shape);
// NumPy broadcasting of two shapes; throws fk::Error naming both when they do not broadcast.
Dims broadcast_shapes(const Dims& a, const Dims& b, const char* where);
// Wraps a possibly negative dimension index into [0, ndim); throws on out of range.
int wrap_dim(int64_t dim, int ndim, const char* where);

}  // namespace fk
