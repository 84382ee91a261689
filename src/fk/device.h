#pragma once
// Where a tensor's storage lives.
#include <cstdint>
#include <string>

namespace fk {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int8_t index = 0;

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

inline constexpr Device kCPU{DeviceType::CPU, 0};
inline Device cuda_device(int index = 0) {
  return Device{DeviceType::CUDA, static_cast<int8_t>(index)};
}
// Parses "cpu", "cuda", "cuda:1"; throws fk::Error otherwise.
Device parse_device(const std::string& s);

// Number of usable CUDA devices: 0 when built without CUDA, when no driver is
// present, or on any error from the runtime (this machine reports error 35).
int cuda_device_count();

// fk::Error at `where` unless this process can use `device`: the CPU, or a
// CUDA device below cuda_device_count() (naming how many there are, or that
// the build has no CUDA backend). Commands check their device with it before
// any work.
void check_usable(Device device, const std::string& where);

// Waits until the work queued on the device's current stream (this thread's)
// has finished, as torch.cuda.synchronize does; nothing to wait for on the
// CPU. Throws fk::Error for a device fk cannot use, or for an index a kernel
// found out of range.
void synchronize(Device device);

}  // namespace fk
