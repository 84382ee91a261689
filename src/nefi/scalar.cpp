#include "nefi/scalar.h"

#include "fk/factory.h"

namespace nefi {

double scalar_value(const fk::Tensor& t) {
  if (t.numel() == 1 && t.device().is_cpu()) {
    if (t.dtype() == fk::DType::F32) return *static_cast<const float*>(t.data_ptr());
    if (t.dtype() == fk::DType::F64) return *static_cast<const double*>(t.data_ptr());
  }
  return t.item();
}

fk::Tensor make_scalar(double value, fk::DType dtype) {
  if (dtype != fk::DType::F32 && dtype != fk::DType::F64) return fk::scalar_tensor(value, {dtype});
  fk::Tensor t = fk::empty(fk::Dims{}, {dtype});
  if (dtype == fk::DType::F32)
    *t.data<float>() = static_cast<float>(value);
  else
    *t.data<double>() = value;
  return t;
}

}  // namespace nefi
