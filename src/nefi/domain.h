#pragma once
// Domain: a box of physical size `extent` sampled by a cell-centred grid of
// `shape` cells. Normalised coordinates put cell centres at (2i+1)/n - 1, so
// every resolution of one domain covers the same [-1, 1] box and a field
// evaluated at any stage sees the same physical point at the same input.
#include <string>
#include <vector>

#include "fk/tensor.h"

namespace nefi {

class Domain {
 public:
  Domain() = default;
  // extent empty: unit length along every axis. Throws on a non-positive size.
  Domain(fk::Dims shape, std::vector<double> extent = {});

  const fk::Dims& shape() const { return shape_; }
  const std::vector<double>& extent() const { return extent_; }
  int ndim() const { return shape_.size(); }
  int64_t numel() const { return shape_.numel(); }
  // Physical cell size along each axis at `shape` (this domain's shape by default).
  std::vector<double> spacing() const { return spacing(shape_); }
  std::vector<double> spacing(const fk::Dims& shape) const;
  // Coordinates of the cell centres, shape (*shape, ndim), dtype f32 (or the
  // given dtype), C order, values in (-1, 1).
  fk::Tensor coords(fk::DType dtype = fk::DType::F32) const;
  // The same box sampled at another resolution.
  Domain at(const fk::Dims& shape) const;
  // Each axis divided by `factor`, never below min_size (nor above the current size).
  Domain coarsen(int factor = 2, int64_t min_size = 4) const;
  Domain refine(int factor = 2) const;
  std::string str() const;

 private:
  fk::Dims shape_;
  std::vector<double> extent_;
};

}  // namespace nefi
