#pragma once
// The built-in forward models `nefi fit --operator KIND` builds, and the
// options each reads; the field's grid from --shape or from what the model
// implies.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fk/shape.h"
#include "nefi/measurement.h"
#include "nefi/operators/operator.h"

namespace nefi::cli {

struct OperatorRequest {
  std::string kind, pattern, factors;
  double oversample = 2.0, i0 = 1.0, sigma = 0;
  int axis = 0, views = 16;
  bool centered = false, periodic = false;
  // advection_diffusion
  std::string times, velocity, boundary = "closed", unknown = "initial", scheme = "lax_wendroff";
  std::string release, release_is = "initial";  // --unknown diffusivity: the known release
  double diffusivity = 0, courant = 0.9;
  // Each kind's own options and the kinds that read them (filled by
  // add_operator_options): one given for a model that ignores it is refused.
  std::vector<std::pair<const CLI::Option*, std::vector<std::string>>> kind_options;
};

// --operator and the options of every kind, on `sub`.
void add_operator_options(CLI::App* sub, OperatorRequest& r);
// Refuses an option given for a model that does not read it (--views with
// --operator gaussian_blur, --sigma with --matrix), naming its kinds.
void check_operator_options(const OperatorRequest& r);

// "16,16" as integers >= 1 (1 to 3 of them), `flag` naming the option.
std::vector<int64_t> parse_list(const std::string& s, const char* flag);

// An .npy of real values for `flag` (--mask, --pattern, ...): a complex one
// is refused by name, where a conversion to f64 would drop its imaginary part.
fk::Tensor read_real_npy(const std::string& path, const char* flag);

// The field's grid: --shape (`shape`), else what the model implies
// (`implied`, empty when it implies none).
fk::Dims field_shape(const std::string& shape, const fk::Dims& implied, const std::string& model);

struct Model {
  OperatorPtr op;
  fk::Dims shape;
};

// The built-in operator r.kind names on the grid --shape gives (or its
// pattern implies); complex k-space data in m become the (2, m) real and
// imaginary parts it predicts.
Model builtin_model(const OperatorRequest& r, const std::string& shape, Measurement& m);

}  // namespace nefi::cli
