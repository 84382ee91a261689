#pragma once
// RadonOperator: 2-D parallel-beam line integrals of an image mu on the
// square [0, L]^2 (cell-centred n x n grid, axis 0 then axis 1):
//   y[v, j] = sum_k dt * bilinear(mu, c + s_j e_v + t_k e_v^perp)
// with e_v = (cos th_v, sin th_v) in (axis 0, axis 1), th_v = v * angle_range
// / n_views, detector bins s_j = (j + 1/2) ds - L/2 (ds = L / (n det_per_pixel)),
// samples t_k = (k + 1/2) dt - L/2 (dt = L / (n samples_per_pixel)) about the
// centre c: the image rotated by bilinear sampling (zero outside the box, so
// the square's corners beyond the inscribed circle are not seen) and summed
// along rays, scaled by dt to physical line integrals. At th = 0 with one
// detector bin and one sample per pixel the samples are the cell centres and
// a projection is the sum over axis 1 times the cell size.
// The map is stored once per resolution as a sparse matrix (4 bilinear
// weights per sample, 4 V n_det n spp entries); forward is a sparse product
// and the adjoint its exact transpose (one autograd node each way).
// Input (..., n, n) real f32/f64 (leading dims are a batch); output
// (..., n_views, n_det), the same dtype, computed in f64. Linear, batchable.
// On a 3-D domain (n, n, n_z) (axis 2 = z, the rotation axis) every z slice
// is projected by the same 2-D map: input (..., n, n, n_z), output
// (..., n_views, n_det, n_z); each matrix entry then scales a contiguous
// run of n_z values (the slices are the innermost axis, as the reference
// batches them as channels of one sampling pass).
// Devices: an image on a CUDA device is projected there (radon_device.h):
// the matrix and its transpose are uploaded once per resolution and device,
// and forward and adjoint are each one gather kernel summing in the CPU's
// order, so the results equal the CPU's to the bit and a step through the
// operator reads nothing back to the host (graph-capturable).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nefi/domain.h"
#include "nefi/operators/operator.h"
#include "nefi/operators/sparse_rows.h"

namespace nefi {

// SparseRows (and the device kernels reading them, cuda/radon.cu) store
// column indices as int32: the projection's columns are the n x n pixels,
// its transpose's the n_views x n_det sinogram rows. Throws fk::Error naming
// both sizes when either exceeds 2^31 - 1. Entries and rows are indexed in
// int64 (row starts, the kernels' loops), so their counts have no such limit.
void check_radon_index_range(int64_t pixels, int64_t sinogram_rows);

// A RadonOperator's matrix and its transpose on one device: row starts i64,
// columns i32, weights f64 (SparseRows' vectors, as 1-D tensors).
struct RadonMatricesOnDevice {
  fk::Tensor row_start, col, weight;                          // the projection (rows v n_det + j)
  fk::Tensor adjoint_row_start, adjoint_col, adjoint_weight;  // its transpose (rows = pixels)
};

struct RadonGeometry {
  int64_t n_views = 16;
  double angle_range = 3.141592653589793;  // radians (pi: a full parallel-beam scan)
  int64_t det_per_pixel = 1;
  int64_t samples_per_pixel = 1;
};

class RadonOperator : public Operator {
 public:
  // Throws fk::Error on a domain that is not square in axes 0 and 1 (2-D or
  // 3-D) or a non-positive geometry value.
  RadonOperator(Domain domain, RadonGeometry geometry);
  fk::Tensor apply(const fk::Tensor& x) const override;
  std::shared_ptr<Operator> at_resolution(const fk::Dims& shape) const override;
  fk::Dims output_shape(const fk::Dims& shape) const override;
  std::optional<double> homogeneity() const override { return 1.0; }
  std::string fidelity_tag() const override;
  std::string kind() const override { return domain_.ndim() == 3 ? "radon3d" : "radon"; }
  void prepare_tables(fk::Device device, fk::DType dtype) const override;
  bool batchable() const override { return true; }
  const Domain& domain() const { return domain_; }
  const RadonGeometry& geometry() const { return geometry_; }
  int64_t n_det() const { return domain_.shape()[0] * geometry_.det_per_pixel; }
  // Slices projected independently: n_z on a 3-D domain, else 1.
  int64_t n_slices() const { return domain_.ndim() == 3 ? domain_.shape()[2] : 1; }
  std::vector<double> angles() const;
  // Forward and exact adjoint on host values, f64:
  // (batch, n, n[, n_z]) <-> (batch, V, n_det[, n_z]).
  std::vector<double> project(const std::vector<double>& image, int64_t batch) const;
  std::vector<double> adjoint(const std::vector<double>& sinogram, int64_t batch) const;
  // The projection matrix: rows v * n_det + j, columns the pixels i * n + j.
  const SparseRows& matrix() const { return *matrix_; }
  // matrix() and its transpose on `device`, uploaded on first use and cached
  // with the matrix (copies of the operator at this resolution share them).
  RadonMatricesOnDevice matrices_on(fk::Device device) const;

 private:
  struct DeviceCache {
    std::mutex mu;
    std::map<std::string, RadonMatricesOnDevice> by_device;
  };
  void prepare();
  Domain domain_;
  RadonGeometry geometry_;
  std::shared_ptr<const SparseRows> matrix_;
  std::shared_ptr<DeviceCache> device_cache_;
};

}  // namespace nefi
