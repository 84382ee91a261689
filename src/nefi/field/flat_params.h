#pragma once
// FlatParams: every trainable tensor of a field lives in ONE contiguous buffer
// (`flat`, the only autograd leaf), and the named parameters are views into it.
// views() hands out the parameter views for one forward pass through a single
// autograd node whose backward writes all their gradients straight into one
// flat gradient: the optimizer then runs one fused loop over one buffer
// (tiny-cuda-nn's parameter layout), and the backward costs one op, not one
// accumulation per parameter. The buffer may live on a CUDA device (to()).
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace nefi {

class FlatParams {
 public:
  // Reserves a parameter; returns its index. Only before allocate().
  int add(std::string name, fk::Dims shape);
  // Allocates the buffer (zeros) and marks it as requiring grad.
  void allocate(fk::DType dtype = fk::DType::F32);
  void clear();
  // Moves the buffer (values kept, a new leaf) to device d; gradients of
  // views() are then made there.
  void to(fk::Device d);

  bool allocated() const { return flat_.defined(); }
  int size() const { return static_cast<int>(entries_.size()); }
  int64_t numel() const { return total_; }
  const std::string& name(int i) const { return entries_[i].name; }
  const fk::Dims& shape(int i) const { return entries_[i].shape; }
  int64_t offset(int i) const { return entries_[i].offset; }  // in flat(), in elements
  fk::Tensor& flat() { return flat_; }
  const fk::Tensor& flat() const { return flat_; }
  // A detached view of parameter i (for initialisation; writes reach the buffer).
  fk::Tensor raw(int i) const;
  // Differentiable views of every parameter for one forward pass.
  std::vector<fk::Tensor> views() const;

 private:
  struct Entry {
    std::string name;
    fk::Dims shape;
    int64_t offset;
  };
  std::vector<Entry> entries_;
  int64_t total_ = 0;
  fk::Tensor flat_;
};

}  // namespace nefi
