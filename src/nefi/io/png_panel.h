#pragma once
// A PNG panel of ground truth | measurement | reconstruction: 2-D fields as
// grayscale images (truth and reconstruction on the truth's range, the
// measurement on its own), 1-D fields as line plots (the reconstruction over
// the truth in grey).
#include <string>

#include "fk/tensor.h"

namespace nefi {

void write_panel_png(const std::string& path, const fk::Tensor& gt, const fk::Tensor& measurement,
                     const fk::Tensor& reconstruction);

}  // namespace nefi
