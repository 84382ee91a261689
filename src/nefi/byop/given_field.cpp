#include "nefi/byop/given_field.h"

#include <fmt/format.h>

#include "fk/error.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/hash_grid_field.h"
#include "nefi/field/layered_field.h"
#include "nefi/field/low_rank_field.h"
#include "nefi/field/spectral_field.h"

namespace nefi {

GivenField given_field(const AutoOptions& o, const Domain& domain,
                       const std::vector<HeadPtr>& heads) {
  const fk::Dims& shape = domain.shape();
  GivenField g;
  if (o.representation == "hash") {
    HashGridConfig hc;
    hc.hidden = o.hidden.value_or(64);
    hc.depth = o.depth.value_or(2);
    auto hf = std::make_shared<HashGridField>(shape, heads, hc, o.seed);
    const HashGridLayout& L = hf->layout();
    g.why = fmt::format(
        "given: {} levels x {} features, {} .. {} cells, tables of <= 2^{}, MLP {} x {}", hc.levels,
        hc.features, L.resolution.front(), L.resolution.back(), hc.log2_table, hc.hidden, hc.depth);
    g.field = std::move(hf);
  } else if (o.representation == "lowrank") {
    g.field = std::make_shared<LowRankField>(shape, heads, o.rank, o.seed);
    g.why = fmt::format("given: a rank-{} CP sum over the axes, {} parameters", o.rank,
                        g.field->n_parameters());
  } else if (o.representation == "spectral") {
    SpectralConfig sc;
    sc.modes = o.modes;
    sc.smoothness = o.smoothness;
    auto sf = std::make_shared<SpectralField>(domain, heads, sc);
    g.why = "given: cosines " + sf->modes().str() + " per field" +
            (o.smoothness > 0 ? fmt::format(", gains (1 + |k|^2)^-{:.4g}: the fine modes move "
                                            "slower",
                                            o.smoothness / 2)
                              : std::string(", every mode alike"));
    g.field = std::move(sf);
  } else if (o.representation == "layers") {
    LayeredConfig lc;
    lc.layers = o.layers;
    lc.axis = o.layer_axis;
    lc.modes = o.harmonics;
    g.field = std::make_shared<LayeredField>(shape, heads, lc);
    g.why = fmt::format(
        "given: {} layers along axis {} per field, interfaces of lateral degree {}, {} "
        "parameters; flat, evenly spaced and without jumps at the start",
        o.layers, o.layer_axis, o.harmonics, g.field->n_parameters());
  } else {
    FK_CHECK(o.representation == "grid", "representation",
             "hash, lowrank, spectral, layers or grid", o.representation);
    g.field = std::make_shared<GridField>(shape, heads);
    g.why = "given: one value per cell";
  }
  return g;
}

}  // namespace nefi
