#include "nefi/byop/parametric_choice.h"

#include "fk/ops/binary.h"
#include "fk/ops/reduce.h"

namespace nefi {

ParametricChoice parametric_choice(const AutoOptions& o, const fk::Dims& shape,
                                   const std::vector<HeadPtr>& heads, const Operator& op,
                                   const ConstantFields& k, const Weighted& d,
                                   const std::vector<double>& c,
                                   const std::vector<PriorSpec>& priors) {
  const bool layered = o.representation.starts_with("layers+");
  ParametricConfig pc;
  pc.family = layered ? o.representation.substr(7) : o.representation;
  pc.count = o.shapes;
  pc.harmonics = o.harmonics;
  pc.vertices = o.vertices;
  if (layered) {
    pc.layers.emplace();
    pc.layers->layers = o.layers;
    pc.layers->axis = o.layer_axis;
    pc.layers->modes = o.harmonics;
  }
  auto pf = std::make_shared<ParametricField>(shape, heads, pc, o.seed);
  std::vector<double> at = c;
  for (size_t i = 0; i < at.size(); ++i)
    if (priors[i].zero_mean) at[i] = 0;
  std::vector<fk::Tensor> pull = misfit_gradient_at(op, k, d, at);
  int placed = 0;
  for (int i = 0, channel = 0; i < static_cast<int>(heads.size()); ++i) {
    if (k.support[i].defined()) pull[i] = fk::mul(pull[i], k.support[i]);
    if (priors[i].zero_mean) pull[i] = fk::sub(pull[i], fk::mean(pull[i]));
    if (heads[i]->n_in() == 1) {
      pf->start_at_extrema(channel, pull[i], k.support[i]);
      placed += pf->placed_from_map(channel);
    }
    channel += heads[i]->n_in();
  }
  pf->reset_parameters(o.seed);
  const std::string family = pc.family == "blobs"      ? "gaussian blobs"
                             : pc.family == "ellipses" ? "ellipses"
                             : pc.family == "polygons"
                                 ? "polygons (" + std::to_string(o.vertices) + " vertices)"
                                 : "stars (outlines of degree " + std::to_string(o.harmonics) + ")";
  const std::string background =
      layered ? " over " + std::to_string(o.layers) + " layers along axis " +
                    std::to_string(o.layer_axis) + " (interfaces of lateral degree " +
                    std::to_string(o.harmonics) + ")"
              : " on a background";
  ParametricChoice out;
  out.why = "given: " + std::to_string(o.shapes) + " " + family + background + " per field, " +
            std::to_string(pf->n_parameters()) + " parameters; " + std::to_string(placed) +
            " started at the strongest extrema of the misfit's gradient, the rest on a lattice";
  out.field = std::move(pf);
  return out;
}

}  // namespace nefi
