#pragma once
// Launchers of fk's CUDA kernels: raw pointers and a stream (cudaStream_t as
// void*), no CUDA types, so .cpp dispatch code includes this without the toolkit.
#include <cstdint>

namespace fk::cuda {

void fill_f32(float* out, float value, int64_t n, void* stream);
void fill_f64(double* out, double value, int64_t n, void* stream);

}  // namespace fk::cuda
