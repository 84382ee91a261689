#include "nefi/operators/radon.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/profile.h"
#include "nefi/operators/radon_device.h"

namespace nefi {
namespace {

struct RadonBackward : fk::autograd::Node {
  std::shared_ptr<const RadonOperator> op;
  fk::Dims in_shape;
  const char* name() const override { return "RadonBackward"; }
  std::vector<fk::Tensor> apply(std::vector<fk::Tensor>&& grads) override {
    fk::autograd::NoGradGuard ng;
    const fk::Tensor& g = grads[0];
    const int64_t per = op->geometry().n_views * op->n_det() * op->n_slices();
    const auto x = op->adjoint(g.to_vector<double>(), g.numel() / per);
    return {fk::from_vector(x, in_shape).to(g.dtype())};
  }
};

}  // namespace

void check_radon_index_range(int64_t pixels, int64_t sinogram_rows) {
  constexpr int64_t kMaxColumns = std::numeric_limits<int32_t>::max();
  FK_CHECK(pixels <= kMaxColumns && sinogram_rows <= kMaxColumns, "nefi::RadonOperator",
           "at most " + fk::to_text(kMaxColumns) +
               " pixels (n x n) and sinogram rows (n_views x n_det): the sparse matrices store "
               "int32 column indices",
           fk::to_text(pixels) + " pixels and " + fk::to_text(sinogram_rows) + " sinogram rows");
}

RadonOperator::RadonOperator(Domain domain, RadonGeometry geometry)
    : domain_(std::move(domain)), geometry_(geometry) {
  FK_CHECK((domain_.ndim() == 2 || domain_.ndim() == 3) &&
               domain_.shape()[0] == domain_.shape()[1] &&
               domain_.extent()[0] == domain_.extent()[1],
           "nefi::RadonOperator", "a 2-D or 3-D domain square in axes 0 and 1", domain_.str());
  FK_CHECK(geometry_.n_views >= 1, "nefi::RadonOperator", "n_views >= 1",
           fk::to_text(geometry_.n_views));
  FK_CHECK(geometry_.angle_range > 0 && std::isfinite(geometry_.angle_range), "nefi::RadonOperator",
           "a finite angle_range > 0", fk::to_text(geometry_.angle_range));
  FK_CHECK(geometry_.det_per_pixel >= 1 && geometry_.samples_per_pixel >= 1, "nefi::RadonOperator",
           "det_per_pixel and samples_per_pixel >= 1",
           fk::to_text(geometry_.det_per_pixel) + ", " + fk::to_text(geometry_.samples_per_pixel));
  prepare();
}

std::vector<double> RadonOperator::angles() const {
  std::vector<double> th;
  for (int64_t v = 0; v < geometry_.n_views; ++v)
    th.push_back(geometry_.angle_range * static_cast<double>(v) / geometry_.n_views);
  return th;
}

void RadonOperator::prepare() {
  const int64_t n = domain_.shape()[0], nd = n_det(), ns = n * geometry_.samples_per_pixel;
  const double L = domain_.extent()[0], h = L / n, ds = L / nd, dt = L / ns;
  check_radon_index_range(n * n, geometry_.n_views * nd);
  auto m = std::make_shared<SparseRows>();
  m->n_cols = n * n;
  for (double th : angles()) {
    const double c = std::cos(th), s = std::sin(th);
    for (int64_t j = 0; j < nd; ++j) {
      const double sj = (j + 0.5) * ds - L / 2;
      for (int64_t k = 0; k < ns; ++k) {
        const double tk = (k + 0.5) * dt - L / 2;
        // Continuous cell index of the sample point (cell centres at integers).
        const double u = (L / 2 + sj * c - tk * s) / h - 0.5;
        const double w = (L / 2 + sj * s + tk * c) / h - 0.5;
        const double fu = std::floor(u), fw = std::floor(w);
        const int64_t i0 = static_cast<int64_t>(fu), j0 = static_cast<int64_t>(fw);
        const double au = u - fu, aw = w - fw;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 2; ++dj) {
            const int64_t i = i0 + di, jj = j0 + dj;
            const double wt = (di ? au : 1 - au) * (dj ? aw : 1 - aw) * dt;
            if (i < 0 || i >= n || jj < 0 || jj >= n || wt == 0) continue;
            m->col.push_back(static_cast<int32_t>(i * n + jj));
            m->weight.push_back(wt);
          }
      }
      m->row_start.push_back(static_cast<int64_t>(m->col.size()));
    }
  }
  matrix_ = m;
  device_cache_ = std::make_shared<DeviceCache>();
}

RadonMatricesOnDevice RadonOperator::matrices_on(fk::Device device) const {
  std::lock_guard<std::mutex> lock(device_cache_->mu);
  auto it = device_cache_->by_device.find(device.str());
  if (it != device_cache_->by_device.end()) return it->second;
  const SparseRows& m = *matrix_;
  const SparseRows t = transpose(m);
  auto upload = [&](const auto& v) {
    return fk::from_vector(v, {static_cast<int64_t>(v.size())}, device);
  };
  RadonMatricesOnDevice d{upload(m.row_start), upload(m.col), upload(m.weight),
                          upload(t.row_start), upload(t.col), upload(t.weight)};
  device_cache_->by_device[device.str()] = d;
  return d;
}

// The matrices serve every dtype (weights f64).
void RadonOperator::prepare_tables(fk::Device device, fk::DType) const {
  if (device.is_cuda()) matrices_on(device);
}

std::string RadonOperator::fidelity_tag() const {
  return std::string(domain_.ndim() == 3 ? "radon3d-" : "radon-") +
         std::to_string(domain_.shape()[0]) + "px-" + std::to_string(geometry_.det_per_pixel) +
         "det-" + std::to_string(geometry_.samples_per_pixel) + "spp";
}

fk::Dims RadonOperator::output_shape(const fk::Dims& shape) const {
  std::vector<int64_t> out(shape.begin(), shape.end());
  const size_t d = static_cast<size_t>(domain_.ndim());
  FK_CHECK(out.size() >= d, "nefi::RadonOperator",
           d == 3 ? "a shape (..., n, n, n_z)" : "a shape (..., n, n)", shape.str());
  out.resize(out.size() - d);
  out.push_back(geometry_.n_views);
  out.push_back(n_det());
  if (d == 3) out.push_back(shape[shape.size() - 1]);
  return fk::Dims(out);
}

std::shared_ptr<Operator> RadonOperator::at_resolution(const fk::Dims& shape) const {
  auto op = std::make_shared<RadonOperator>(*this);
  op->domain_ = domain_.at(shape);
  op->prepare();
  return op;
}

std::vector<double> RadonOperator::project(const std::vector<double>& image, int64_t batch) const {
  const SparseRows& m = *matrix_;
  const int64_t rows = m.n_rows(), cols = domain_.numel();
  const int64_t nz = n_slices();
  std::vector<double> y(batch * rows * nz, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    const double* x = image.data() + b * cols;
    for (int64_t r = 0; r < rows; ++r) {
      double* yr = y.data() + (b * rows + r) * nz;
      for (int64_t e = m.row_start[r]; e < m.row_start[r + 1]; ++e) {
        const double w = m.weight[e];
        const double* xe = x + m.col[e] * nz;
        for (int64_t z = 0; z < nz; ++z) yr[z] += w * xe[z];
      }
    }
  }
  return y;
}

std::vector<double> RadonOperator::adjoint(const std::vector<double>& sinogram,
                                           int64_t batch) const {
  const SparseRows& m = *matrix_;
  const int64_t rows = m.n_rows(), cols = domain_.numel();
  const int64_t nz = n_slices();
  std::vector<double> x(batch * cols, 0.0);
  for (int64_t b = 0; b < batch; ++b) {
    double* xb = x.data() + b * cols;
    for (int64_t r = 0; r < rows; ++r) {
      const double* g = sinogram.data() + (b * rows + r) * nz;
      for (int64_t e = m.row_start[r]; e < m.row_start[r + 1]; ++e) {
        const double w = m.weight[e];
        double* xe = xb + m.col[e] * nz;
        for (int64_t z = 0; z < nz; ++z) xe[z] += w * g[z];
      }
    }
  }
  return x;
}

fk::Tensor RadonOperator::apply(const fk::Tensor& x) const {
  const int64_t d = domain_.ndim();
  bool match = x.dim() >= d;
  for (int64_t a = 0; match && a < d; ++a) match = x.size(x.dim() - d + a) == domain_.shape()[a];
  FK_CHECK(match, "nefi::RadonOperator", "an image of shape (..., " + domain_.shape().str() + ")",
           x.shape().str());
  FK_CHECK(x.dtype() == fk::DType::F32 || x.dtype() == fk::DType::F64, "nefi::RadonOperator",
           "a real f32/f64 image", fk::name(x.dtype()));
  if (!x.device().is_cpu()) return radon_device(*this, x);
  fk::Tensor y;
  {
    fk::autograd::NoGradGuard ng;
    fk::profile::OpScope scope("radon");
    y = fk::from_vector(project(x.detach().to_vector<double>(), x.numel() / domain_.numel()),
                        output_shape(x.shape()))
            .to(x.dtype());
  }
  if (fk::autograd::needs_grad(x)) {
    auto node = std::make_shared<RadonBackward>();
    node->op = std::make_shared<const RadonOperator>(*this);  // shares the matrix
    node->in_shape = x.shape();
    fk::autograd::record(node, {x}, y);
  }
  return y;
}

}  // namespace nefi
