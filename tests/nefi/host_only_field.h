#pragma once
// A field without a device path (Field's defaults: to() refuses a device),
// for the tests of the device refusals: every field kind of nefi has one.
// Its one parameter is the field's values on the grid it was made for.
#include <cstdint>
#include <string>

#include "fk/tensor.h"
#include "nefi/field/field.h"

namespace nefi::test {

class HostOnlyField : public Field {
 public:
  explicit HostOnlyField(const fk::Dims& shape) {
    primary_ = "x";
    params_.add("x", shape);
    params_.allocate(fk::DType::F32);
  }
  FieldMap forward(const Domain&, double) override { return {{"x", params_.views()[0]}}; }
  void reset_parameters(uint64_t) override {}
  std::string kind() const override { return "host_only"; }
};

}  // namespace nefi::test
