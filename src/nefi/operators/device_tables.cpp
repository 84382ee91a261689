#include "nefi/operators/device_tables.h"

namespace nefi {

void prepare_device_tables(const Operator& op, fk::Device device, fk::DType dtype) {
  if (const auto* tables = dynamic_cast<const DeviceTables*>(&op))
    tables->prepare_tables(device, dtype);
}

}  // namespace nefi
