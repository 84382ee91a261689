#include "nefi/operators/wave/wave_device_tables.h"

#include <cstdint>
#include <vector>

#include "fk/error.h"
#include "fk/factory.h"
#include "nefi/cuda/wave_cell_layout.h"

namespace nefi::wave {
namespace {

template <typename V>
fk::Tensor upload(const std::vector<V>& v, fk::Device device) {
  return fk::from_vector(v, {static_cast<int64_t>(v.size())}).to(device);
}

void upload_stencils(const std::vector<PointStencil>& points, fk::Device device, fk::Tensor& start,
                     fk::Tensor& index, fk::Tensor& weight) {
  std::vector<int64_t> s{0}, idx;
  std::vector<double> w;
  for (const PointStencil& p : points) {
    idx.insert(idx.end(), p.index.begin(), p.index.end());
    w.insert(w.end(), p.weight.begin(), p.weight.end());
    s.push_back(static_cast<int64_t>(idx.size()));
  }
  start = upload(s, device), index = upload(idx, device), weight = upload(w, device);
}

template <typename T>
void upload_coefficients(const ShotGeometry& geo, WaveDeviceTables& t) {
  // κ = 0: k and beta vanish, everything else is what any velocity gives.
  const StepCoefficients<T> co =
      step_coefficients<T>(geo.grid, geo.damping, std::vector<double>(geo.grid.numel, 0.0));
  t.q2 = upload(co.q2, t.device), t.b = upload(co.b, t.device);
  t.a_dt2 = upload(co.a_dt2, t.device);
  t.k_per_kappa = upload(co.k_per_kappa, t.device);
  if (!co.pml) return;
  for (int d = 0; d < 3; ++d)
    if (geo.grid.active[d])
      t.alpha[d] = upload(co.alpha[d], t.device),
      t.beta_per_kappa[d] = upload(co.beta_per_kappa[d], t.device);
}

}  // namespace

WaveDeviceTables upload_wave_tables(const ShotGeometry& geo, fk::Device device, fk::DType dtype) {
  FK_CHECK(dtype == fk::DType::F32 || dtype == fk::DType::F64, "nefi::wave device tables",
           "dtype f32 or f64", fk::name(dtype));
  WaveDeviceTables t;
  t.device = device;
  t.dtype = dtype;
  if (dtype == fk::DType::F32)
    upload_coefficients<float>(geo, t);
  else
    upload_coefficients<double>(geo, t);
  upload_stencils(geo.sources, device, t.source_start, t.source_index, t.source_weight);
  upload_stencils(geo.receivers, device, t.receiver_start, t.receiver_index, t.receiver_weight);
  const cuda::CellStencilsCsr by_cell = cuda::stencils_by_cell(geo.receivers);
  t.injection_start = upload(by_cell.start, device),
  t.injection_cell = upload(by_cell.cell, device);
  t.injection_receiver = upload(by_cell.point, device);
  t.injection_weight = upload(by_cell.weight, device);
  if (!geo.wavelet.empty()) t.wavelet = upload(geo.wavelet, device);
  return t;
}

}  // namespace nefi::wave
