#pragma once
// DeviceTables: what an operator that keeps constant tables on a device
// (uploaded matrices, spectra, transfer functions, initial states, weight
// maps) implements besides Operator, so that every table exists before a
// step is captured as a CUDA graph: a captured step may not copy from the
// host, so a table first made inside a capture fails it and the stage runs
// eagerly. The solver calls prepare_device_tables at every stage start,
// before the stage's first step. Forward still makes a missing table itself
// (an eager caller needs no hook). Operators built from others implement it
// to reach their parts.
#include "fk/device.h"
#include "fk/dtype.h"
#include "nefi/operators/operator.h"

namespace nefi {

class DeviceTables {
 public:
  virtual ~DeviceTables() = default;
  // Makes the tables forward and its gradient use on `device` for inputs of
  // the real dtype `dtype` (nothing for a device that needs none, e.g. the CPU).
  virtual void prepare_tables(fk::Device device, fk::DType dtype) const = 0;
};

// op's tables, when it keeps any (it implements DeviceTables); else nothing.
void prepare_device_tables(const Operator& op, fk::Device device, fk::DType dtype);

}  // namespace nefi
