// HeatConfig::validate: every key checked once, before any buffer is built, so
// a bad config fails with the key's name instead of a NaN trajectory.
#include <cmath>
#include <string>

#include "fk/error.h"
#include "nefi/operators/heat/heat_operator.h"

namespace nefi {
namespace {

std::string where(const char* key) {
  return std::string("HeatConfig.") + key;
}

void check_choice(const char* key, const std::string& value,
                  std::initializer_list<const char*> choices) {
  std::string list;
  for (const char* c : choices) {
    if (value == c) return;
    list += list.empty() ? c : std::string(" | ") + c;
  }
  throw fk::Error(where(key), "one of " + list, "'" + value + "'");
}

void check_positive(const char* key, double v) {
  FK_CHECK(std::isfinite(v) && v > 0, where(key), "a finite value > 0", fk::to_text(v));
}

void check_at_least(const char* key, int64_t v, int64_t lo) {
  FK_CHECK(v >= lo, where(key), ">= " + fk::to_text(lo), fk::to_text(v));
}

}  // namespace

void HeatConfig::validate() const {
  FK_CHECK(extent.size() == 3, where("extent"), "3 entries (x, y, depth)",
           fk::to_text(extent.size()));
  for (double e : extent) check_positive("extent", e);
  check_positive("dt", dt);
  check_at_least("n_frames", n_frames, 1);
  check_at_least("implicit_substeps", implicit_substeps, 1);
  FK_CHECK(first_frame >= 0 && first_frame <= n_frames, where("first_frame"),
           "a frame in [0, n_frames = " + fk::to_text(n_frames) + "]", fk::to_text(first_frame));
  check_at_least("frame_stride", frame_stride, 1);
  check_choice("stencil", stencil, {"flat", "roll", "auto"});
  check_choice("solver", solver, {"jacobi", "chebyshev", "cg"});
  check_at_least("jacobi_iters", jacobi_iters, 1);
  FK_CHECK(std::isfinite(cg_tol) && cg_tol >= 0, where("cg_tol"), "a finite value >= 0",
           fk::to_text(cg_tol));
  check_at_least("cg_max_iter", cg_max_iter, 1);
  check_at_least("check_every", check_every, 1);
  check_choice("grad_mode", grad_mode, {"adjoint", "checkpoint", "autograd"});
  check_choice("back_bc", back_bc, {"neumann", "robin"});
  check_choice("face_mode", face_mode, {"harmonic", "arithmetic"});
  check_choice("lateral_bc", lateral_bc, {"periodic", "neumann"});
  FK_CHECK(std::isfinite(robin_h) && robin_h >= 0, where("robin_h"), "a finite value >= 0",
           fk::to_text(robin_h));
  FK_CHECK(std::isfinite(flash.amplitude), where("flash.amplitude"), "a finite value",
           fk::to_text(flash.amplitude));
  check_positive("flash.width_xy", flash.width_xy);
  check_positive("flash.width_z", flash.width_z);
  if (flash.center) {
    for (double c : *flash.center)
      FK_CHECK(std::isfinite(c), where("flash.center"), "finite coordinates", fk::to_text(c));
  }
}

}  // namespace nefi
