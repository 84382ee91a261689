#pragma once
// `minkowski bench conv --channels 32,64,128,256`: the channel ladder. Per
// width (C_in = C_out = C) on one kernel map: the dataflow path the per-shape
// choice took (conv_path.h), forward and backward time and GFLOP/s, their
// share of the in-run FMA peak and their ratio to the in-run sgemm rate of
// the same shape (rows x C x C), the forced paths (A/B), and the peers'
// method made from this machine's BLAS in the same run: per offset, gather
// the rows, one sgemm, scatter-add (and for the backward the two GEMMs of the
// gradients), the way spconv and MinkowskiEngine run on a CPU. Rates come
// from the least CPU time of the repeats (divided by the threads), which a
// shared machine's other work does not inflate; wall times are reported too.
#include <nlohmann/json.hpp>
#include <vector>

#include "fk/fma_peak.h"
#include "minkowski/minkowski.h"

namespace minkowski_app {

// f32 only (the peers' sgemm). `peak`: the in-run FMA ceiling.
nlohmann::json conv_ladder(const minkowski::KernelMap& map, const std::vector<int>& widths,
                           int repeats, const fk::FmaPeak& peak);

}  // namespace minkowski_app
