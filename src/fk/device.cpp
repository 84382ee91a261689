#include "fk/device.h"

#include "fk/cuda/runtime.h"
#include "fk/error.h"

namespace fk {

std::string Device::str() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

Device parse_device(const std::string& s) {
  if (s == "cpu") return kCPU;
  if (s == "cuda") return cuda_device(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5) {
    try {
      size_t used = 0;
      int idx = std::stoi(s.substr(5), &used);
      if (used == s.size() - 5 && idx >= 0 && idx < 128) return cuda_device(idx);
    } catch (const std::exception&) {
    }
  }
  throw Error("device name", "'cpu', 'cuda' or 'cuda:N'", "'" + s + "'");
}

int cuda_device_count() {
  return cuda::device_count();
}

void check_usable(Device device, const std::string& where) {
  const int n = device.is_cpu() ? 0 : cuda::device_count();
  FK_CHECK(device.is_cpu() || device.index < n, where,
           !cuda::built_with_cuda() ? std::string("cpu (this build has no CUDA backend)")
           : n == 0                 ? std::string("cpu (no CUDA device is visible to this process)")
           : n == 1                 ? std::string("cpu or cuda:0 (the one CUDA device)")
                                    : "cpu or a CUDA device cuda:0 .. cuda:" + fk::to_text(n - 1),
           device.str());
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  FK_CHECK(device.index < cuda::device_count(), "fk::synchronize",
           "a usable CUDA device (" + fk::to_text(cuda::device_count()) + " found)", device.str());
  cuda::synchronize(device.index);
}

}  // namespace fk
