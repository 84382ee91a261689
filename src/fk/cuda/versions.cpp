#include "fk/cuda/versions.h"

#include <cuda_runtime_api.h>

namespace fk::cuda {

Versions versions() {
  Versions v;
  v.built = CUDART_VERSION;
  if (cudaRuntimeGetVersion(&v.runtime) != cudaSuccess) v.runtime = 0;
  if (cudaDriverGetVersion(&v.driver) != cudaSuccess) v.driver = 0;
  cudaGetLastError();  // neither query leaves an error behind for the next launch check
  return v;
}

}  // namespace fk::cuda
