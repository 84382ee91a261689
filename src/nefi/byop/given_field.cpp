#include "nefi/byop/given_field.h"

#include <fmt/format.h>

#include "fk/error.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/hash_grid_field.h"
#include "nefi/field/layered_field.h"
#include "nefi/field/low_rank_field.h"
#include "nefi/field/parametric_field.h"
#include "nefi/field/polygon_outline.h"
#include "nefi/field/spectral_field.h"
#include "nefi/field/star_harmonics.h"

namespace nefi {

void check_representation_options(const AutoOptions& o, const fk::Dims& shape) {
  FK_CHECK(o.representation == "neural" || o.representation == "grid" ||
               o.representation == "hash" || o.representation == "lowrank" ||
               o.representation == "blobs" || o.representation == "ellipses" ||
               o.representation == "stars" || o.representation == "polygons" ||
               o.representation == "layers" || o.representation == "layers+blobs" ||
               o.representation == "layers+ellipses" || o.representation == "spectral",
           "representation",
           "neural, grid, hash, lowrank, blobs, ellipses, stars, polygons, layers, layers+blobs, "
           "layers+ellipses or spectral",
           o.representation);
  const bool layered = o.representation.starts_with("layers");
  FK_CHECK(o.rank >= 1 && o.rank <= 1024, "rank", "a CP rank in [1, 1024]", fk::to_text(o.rank));
  FK_CHECK(o.modes >= 0, "modes", "cosines per axis >= 0 (0: one per cell)", fk::to_text(o.modes));
  FK_CHECK(o.smoothness >= 0 && o.smoothness <= 8, "smoothness", "a smoothness in [0, 8]",
           fmt::format("{:g}", o.smoothness));
  FK_CHECK(o.shapes >= 1 && o.shapes <= 256, "shapes", "a shape count in [1, 256]",
           fk::to_text(o.shapes));
  if (o.representation == "stars")
    FK_CHECK(o.harmonics >= kStarMinDegree && o.harmonics <= kStarMaxDegree, "harmonics",
             "an outline degree in [" + fk::to_text(kStarMinDegree) + ", " +
                 fk::to_text(kStarMaxDegree) + "]",
             fk::to_text(o.harmonics));
  else if (layered)
    FK_CHECK(o.harmonics >= 0 && o.harmonics <= kLayeredMaxDegree, "harmonics",
             "an interface degree in [0, " + fk::to_text(kLayeredMaxDegree) + "]",
             fk::to_text(o.harmonics));
  FK_CHECK(o.layers >= 2 && o.layers <= 64, "layers", "a layer count in [2, 64]",
           fk::to_text(o.layers));
  FK_CHECK(o.layer_axis >= 0 && o.layer_axis < shape.size(), "layer_axis",
           "an axis of the " + fk::to_text(shape.size()) + "-D field", fk::to_text(o.layer_axis));
  FK_CHECK(o.representation != "stars" || shape.size() >= 2, "representation",
           "stars on a 2- or 3-D field (a 1-D star is an interval: ellipses)",
           "stars on " + shape.str());
  if (o.representation == "polygons") {
    FK_CHECK(o.vertices >= kPolygonMinVertices && o.vertices <= kPolygonMaxVertices, "vertices",
             "a vertex count in [" + fk::to_text(kPolygonMinVertices) + ", " +
                 fk::to_text(kPolygonMaxVertices) + "]",
             fk::to_text(o.vertices));
    FK_CHECK(shape.size() == 2, "representation", "polygons on a 2-D field",
             "polygons on " + shape.str());
  }
}

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
