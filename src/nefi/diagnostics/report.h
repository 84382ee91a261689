#pragma once
// The files of `nefi diagnose`: diagnostics.md (the report it prints),
// diagnostics.json (every number), sensitivity.npy (the map at the field's
// shape) and diagnostics.png (the singular values on a log scale beside the
// sensitivity map: a line for 1-D fields, an image for 2-D, the middle slice
// along the first axis beyond).
#include <string>
#include <vector>

#include "nefi/diagnostics/diagnose.h"

namespace nefi::diagnostics {

std::string diagnostics_md(const Diagnostics& d);
std::string diagnostics_json(const Diagnostics& d);
void write_diagnostics_png(const std::string& path, const Diagnostics& d);
// The four files into `dir` (created); returns their paths.
std::vector<std::string> write_diagnostics(const std::string& dir, const Diagnostics& d,
                                           bool png = true);

}  // namespace nefi::diagnostics
