#pragma once
// A --device option's value as a device this process can use, refused by the
// option's name ("minkowski train --device: expected ..."): fk's own errors
// named "device name" or "tensor device" and no option.
#include <string>

#include "fk/device.h"
#include "fk/error.h"

namespace minkowski_app {

inline fk::Device device_option(const std::string& value, const std::string& where) {
  try {
    const fk::Device d = fk::parse_device(value);
    fk::check_usable(d, where);
    return d;
  } catch (const fk::Error& e) {
    throw fk::Error(where, e.expected(), e.given());
  }
}

}  // namespace minkowski_app
