// The emulated CUDA runtime's device (one H200, fkemu's) and kernels: the
// device queries, versions, kernel attributes, occupancy and cooperative
// launches, over the emulator's own answers (emulated_device.h).
#include <cuda_runtime.h>

#include <cstdio>

#include "emulated_runtime.h"

namespace {

// The driver the emulation stands for: one supporting the runtime's CUDA.
constexpr int kDriverVersion = 13000;

}  // namespace

using fkemu::runtime::Lock;
using fkemu::runtime::mutex;
using fkemu::runtime::record;

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return record(cudaErrorInvalidValue);
  Lock lock(mutex());
  return record(fkemu::get_device(device));
}

cudaError_t cudaSetDevice(int device) {
  if (device != 0) return record(cudaErrorInvalidDevice);
  Lock lock(mutex());
  fkemu::set_device(0, fkemu::multiprocessors(0));
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return record(cudaErrorInvalidValue);
  if (device != 0) return record(cudaErrorInvalidDevice);
  Lock lock(mutex());
  return record(fkemu::device_get_attribute(value, attr, device));
}

// The fields the emulator has answers for (cudaDeviceGetAttribute's), the
// rest zero; the name says the device is emulated, so that a benchmark's
// context line cannot pass for a GPU's.
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return record(cudaErrorInvalidValue);
  if (device != 0) return record(cudaErrorInvalidDevice);
  Lock lock(mutex());
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "NVIDIA H200 (emulated by fkemu)");
  prop->totalGlobalMem = fkemu::runtime::device_bytes();
  const auto attribute = [device](cudaDeviceAttr attr) {
    int v = 0;
    fkemu::device_get_attribute(&v, attr, device);
    return v;
  };
  prop->major = attribute(cudaDevAttrComputeCapabilityMajor);
  prop->minor = attribute(cudaDevAttrComputeCapabilityMinor);
  prop->multiProcessorCount = attribute(cudaDevAttrMultiProcessorCount);
  prop->warpSize = attribute(cudaDevAttrWarpSize);
  prop->maxThreadsPerBlock = attribute(cudaDevAttrMaxThreadsPerBlock);
  prop->maxThreadsPerMultiProcessor = attribute(cudaDevAttrMaxThreadsPerMultiProcessor);
  prop->maxBlocksPerMultiProcessor = attribute(cudaDevAttrMaxBlocksPerMultiprocessor);
  prop->regsPerBlock = attribute(cudaDevAttrMaxRegistersPerBlock);
  prop->regsPerMultiprocessor = attribute(cudaDevAttrMaxRegistersPerMultiprocessor);
  prop->sharedMemPerBlock = static_cast<size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlock));
  prop->sharedMemPerBlockOptin =
      static_cast<size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin));
  prop->sharedMemPerMultiprocessor =
      static_cast<size_t>(attribute(cudaDevAttrMaxSharedMemoryPerMultiprocessor));
  prop->totalConstMem = static_cast<size_t>(attribute(cudaDevAttrTotalConstantMemory));
  prop->l2CacheSize = attribute(cudaDevAttrL2CacheSize);
  prop->memoryBusWidth = attribute(cudaDevAttrGlobalMemoryBusWidth);
  prop->maxThreadsDim[0] = attribute(cudaDevAttrMaxBlockDimX);
  prop->maxThreadsDim[1] = attribute(cudaDevAttrMaxBlockDimY);
  prop->maxThreadsDim[2] = attribute(cudaDevAttrMaxBlockDimZ);
  prop->maxGridSize[0] = attribute(cudaDevAttrMaxGridDimX);
  prop->maxGridSize[1] = attribute(cudaDevAttrMaxGridDimY);
  prop->maxGridSize[2] = attribute(cudaDevAttrMaxGridDimZ);
  prop->cooperativeLaunch = attribute(cudaDevAttrCooperativeLaunch);
  prop->unifiedAddressing = attribute(cudaDevAttrUnifiedAddressing);
  prop->canMapHostMemory = attribute(cudaDevAttrCanMapHostMemory);
  prop->concurrentKernels = attribute(cudaDevAttrConcurrentKernels);
  prop->managedMemory = attribute(cudaDevAttrManagedMemory);
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  *driverVersion = kDriverVersion;
  return cudaSuccess;
}

// The dynamic shared memory opt-in (the only attribute the emulator checks)
// and the carveout preference (accepted, nothing to prefer on the CPU).
cudaError_t cudaFuncSetAttribute(const void* func, cudaFuncAttribute attr, int value) {
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  Lock lock(mutex());
  if (attr == cudaFuncAttributePreferredSharedMemoryCarveout)
    return value >= -1 && value <= 100 ? cudaSuccess : record(cudaErrorInvalidValue);
  return record(fkemu::opt_in_shared(func, attr, value));
}

// Plausible figures for an sm_90 kernel: the emulator knows neither its
// registers nor its static shared memory.
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* attr, const void* func) {
  if (attr == nullptr) return record(cudaErrorInvalidValue);
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  Lock lock(mutex());
  *attr = cudaFuncAttributes{};
  attr->maxThreadsPerBlock = 1024;
  attr->numRegs = 32;
  attr->ptxVersion = 90;
  attr->binaryVersion = 90;
  attr->maxDynamicSharedSizeBytes = fkemu::max_dynamic_shared(func);
  attr->preferredShmemCarveout = -1;
  return cudaSuccess;
}

// The emulator's answer for any kernel that fits (emulated_device.h); none
// for a block or a dynamic shared size the kernel could not launch with.
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* numBlocks, const void* func,
                                                                   int blockSize,
                                                                   size_t dynamicSMemSize,
                                                                   unsigned int flags) {
  if (numBlocks == nullptr || blockSize <= 0 ||
      (flags & ~unsigned{cudaOccupancyDisableCachingOverride}) != 0)
    return record(cudaErrorInvalidValue);
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  Lock lock(mutex());
  const bool fits =
      blockSize <= 1024 && dynamicSMemSize <= static_cast<size_t>(fkemu::max_dynamic_shared(func));
  *numBlocks = fits ? fkemu::kCooperativeBlocksPerSm : 0;
  return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, const void* func,
                                                          int blockSize, size_t dynamicSMemSize) {
  return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
      numBlocks, func, blockSize, dynamicSMemSize, cudaOccupancyDefault);
}

// The kernel must have been named through fkemu::kernel_id (the rewritten
// .cu does so); the launch is the stream's work like any other.
cudaError_t cudaLaunchCooperativeKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                        size_t sharedMem, cudaStream_t stream) {
  if (func == nullptr) return record(cudaErrorInvalidDeviceFunction);
  Lock lock(mutex());
  auto* s = fkemu::runtime::find_stream(stream);
  if (s == nullptr) return record(cudaErrorInvalidResourceHandle);
  if (s->capture && s->capture->invalidated) return record(cudaErrorStreamCaptureInvalidated);
  if (s->legacy) {
    if (auto* b = fkemu::runtime::blocking_stream_capturing()) {
      b->capture->invalidated = true;
      return record(cudaErrorStreamCaptureImplicit);
    }
  }
  return record(fkemu::launch_cooperative_kernel(func, gridDim, blockDim, args, sharedMem, stream));
}

}  // extern "C"
