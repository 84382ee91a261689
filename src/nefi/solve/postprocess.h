#pragma once
// Postprocess steps run on the final fields (detached, host):
//   EnergyScaleCorrection(field, homogeneity p): scales the field by
//     alpha = (E_obs / E_pred)^(1/(2p)), E = mean square over observed
//     cells (NeTMY Eq. 30 with E an energy, i.e. squared amplitude), for
//     operators with F(c x) = c^p F(x): the scaled prediction alpha^p F(x)
//     then has the data's energy.
//   Clip(field, lo, hi): clamps the field.
//   ThresholdMask(field, threshold, relative, out): writes a 0/1 mask of
//     field > threshold (times max |field| when relative) as field `out`.
// Each returns what it did as (name, value) pairs for metrics.json.
#include <map>
#include <memory>
#include <string>

#include "nefi/field/field.h"
#include "nefi/measurement.h"

namespace nefi {

class Postprocess {
 public:
  virtual ~Postprocess() = default;
  virtual std::map<std::string, double> apply(FieldMap& fields, fk::Tensor& prediction,
                                              const Measurement& obs) const = 0;
};

using PostprocessPtr = std::shared_ptr<Postprocess>;

PostprocessPtr energy_scale_correction(std::string field, double homogeneity);
PostprocessPtr clip(std::string field, double lo, double hi);
PostprocessPtr threshold_mask(std::string field, double threshold, bool relative = true,
                              std::string out = "mask");

}  // namespace nefi
