// The NEFI_WAVE_FUSED knob (built with and without CUDA: the knob is listed
// everywhere; the device drivers read it).
#include "fk/knobs.h"
#include "nefi/operators/wave/wave_device.h"

namespace nefi {
namespace {

fk::Knob kWaveFused("NEFI_WAVE_FUSED", fk::KnobType::Bool, "1",
                    "nefi device wave solves (wave_fwi, photoacoustic3d): each forward run "
                    "and each adjoint block of leapfrog steps as one cooperative launch with "
                    "grid-wide barriers between a step's phases (0: one launch per phase, "
                    "3-4 a step; devices without cooperative launch always take 0); the "
                    "same bits either way",
                    fk::KnobRead::PerCall);

}  // namespace

bool wave_fused_runs() {
  return kWaveFused.as_bool();
}

}  // namespace nefi
