#pragma once
// Tensors across the Python boundary, without copies, through DLPack
// (nanobind's nb::ndarray): any producer that speaks DLPack (torch, numpy,
// CuPy, JAX) comes in as an fk::Tensor viewing the producer's memory, and an
// fk::Tensor goes out as a torch tensor or numpy array viewing fk's storage.
//
// Inputs keep their strides (fk tensors are strided), so a non-contiguous
// torch view is not copied here; the ops that need contiguous rows copy as
// they would in C++. Negative strides (numpy's reversed views) are a
// ValueError, dtypes fk lacks (uint16, int8, ...) a TypeError naming the
// dtype. What DLPack cannot say is not seen here: a read-only numpy array
// is viewed as writable memory (fk writes no input; only _core's round trips
// hand an input's view back), and a torch view only marked conjugated or
// negated crosses as its raw memory (torch refuses to export one; nanobind
// falls back to torch's exporter, which drops the mark): the public layers
// resolve such views first (fieldkit.minkowski's functional.resolved,
// fieldkit's _host.host_array).
//
// DLPack codes: bool is kDLBool both ways (torch < 2.1 has none: its masks
// cross as numpy arrays); uint8 is a TypeError, never read as bool; bf16 is kDLBfloat/16 both ways.
// Tensors go to torch as a "dltensor" capsule handed straight to
// torch._C._from_dlpack (no Python-level checks on the way).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include "fk/tensor.h"

namespace fkpy {

namespace nb = nanobind;

// The producer's memory as an fk tensor; the storage holds the DLPack
// handle (so the producer's buffer lives as long as any fk view of it).
fk::Tensor from_dlpack(const nb::ndarray<nb::ro>& array);

enum class Framework { Torch, Numpy };

// fk's storage lent to the framework (the returned object keeps it alive).
nb::object to_framework(const fk::Tensor& t, Framework framework);
inline nb::object to_torch(const fk::Tensor& t) {
  return to_framework(t, Framework::Torch);
}
// NumPy holds host memory only: a device tensor comes back as a host copy;
// and it has no bfloat16: a bf16 tensor comes back as an f32 copy (exact).
inline nb::object to_numpy(const fk::Tensor& t) {
  const fk::Tensor host = t.device().is_cpu() ? t : t.to(fk::kCPU);
  return to_framework(host.dtype() == fk::DType::BF16 ? host.to(fk::DType::F32) : host,
                      Framework::Numpy);
}

// Binds the module-level helpers (from_dlpack round trips, data pointers).
void bind_tensor(nb::module_& m);

}  // namespace fkpy
