#pragma once
// A bring-your-own problem: a forward model, one measurement and a prior in
// a few words become a complete InverseProblem and Curriculum, with every
// choice a tuned instance makes by hand decided from the problem's size
// and the data (the reference's nefi.from_forward), and each decision kept
// with its reason so a report can show it and a caller can override it.
//   domain      isotropic cells, the longest axis of length 1
//   network     by cells: <= 1k 64 x 3, <= 16k 128 x 4, <= 262k 256 x 5,
//               else 256 x 6; octaves clamp(ceil(log2 max n), 4, 12)
//   head        from the prior (prior.h), scaled to the data: the constant
//               field c that best explains the data (closed form for one
//               field of known homogeneity p, c^p = <F(1), y> / <F(1), F(1)>,
//               else a search over a log grid, one field at a time for
//               several), so the network starts at c; its O(1) output
//               spans the larger of |c| and the largest change of a
//               data-only fit from c (CGLS stopped at the noise floor for a
//               linear model: constant_fit.h's departure_scales), unless
//               the prior gives scale(v)
//   noise       given, else estimated from the data (noise_estimate.h; for
//               a Sampling or FourierSampling model, from neighbouring
//               samples or the outer frequencies: sampling.h)
//   weights     data: 1 / (misfit of c), so the loss starts at 1; each
//               penalty: strength x (the data term at the noise floor) /
//               (its value on the field of a 25-step data-only probe)
//   budget      quick 300 | default 1500 x clamp((cells / 4096)^(1/4), 0.5,
//               2) | thorough 5000 with early stop (patience 500) | a count
//   curriculum  one stage at the native grid (a function cannot rebuild
//               itself coarser), AdamW, clip 1, cosine lr to 1 %, annealed
//               Fourier features over the first half, a Morozov stop at
//               RMSE <= tau sigma once annealing is done
//               (spectral: L-BFGS, one iteration a step, each line search
//               starting at lr, the stop from the first step unless a
//               head sharpens)
//   lr          neural 1e-2 x sqrt(64 / width), hash and lowrank 1e-2, grid 1e-1,
//               spectral 1, blobs, ellipses, stars, polygons, layers and
//               layers+shapes 5e-2
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nefi/byop/prior.h"
#include "nefi/solve/curriculum.h"
#include "nefi/solve/problem.h"
#include "nefi/solve/result.h"
#include "nefi/solve/solver.h"

namespace nefi {

struct AutoOptions {
  std::string prior = "unconstrained";  // prior.h; the field is named "x"
  // Several fields instead: (name, prior) in the model's input order; each
  // gets its own head, constant fit and penalties (named "<kind>:<field>").
  std::vector<std::pair<std::string, std::string>> field_priors;
  // Known supports by field name ("x" for one field): masks of the field's
  // shape, values in [0, 1], 1 inside; a field with one is zero outside, or
  // the low bound of a range that excludes 0 (prior.h's known_support).
  std::map<std::string, fk::Tensor> supports;
  std::vector<double> extent;  // empty: isotropic, longest axis 1
  // neural | grid | hash (hash_grid_field.h) | lowrank (low_rank_field.h) |
  // blobs | ellipses | stars | polygons (parametric_field.h: a few shapes
  // on a background; stars are ellipses with an outline of angular
  // harmonics, polygons ellipses turned into polygons of `vertices` corners) |
  // layers (layered_field.h: strata along one axis) | layers+blobs |
  // layers+ellipses (the shapes over a layered background instead of a
  // constant one: inclusions in strata) | spectral (spectral_field.h: a
  // cosine series whose fine modes move slower)
  std::string representation = "neural";
  int rank = 8;  // lowrank's CP rank
  // spectral: cosines per axis (0: one per cell) and the smoothness s of
  // its gains (1 + |kappa|^2)^(-s/2)
  int modes = 0;
  double smoothness = 2.0;
  int shapes = 4;  // blobs', ellipses', stars' and polygons' count per field (over layers too)
  // stars: the outline's highest angular degree (3..8); layers and
  // layers+shapes: the interfaces' lateral cosine degree (0..8, 0: flat)
  int harmonics = 6;
  int vertices = 6;                 // polygons: V (3..16)
  int layers = 3;                   // layers (and layers+shapes): K per field
  int layer_axis = 0;               // layers (and layers+shapes): the axis they stack along
  std::optional<double> noise_std;  // unset: estimated; 0: noise-free data
  std::string budget = "default";   // quick | default | thorough | a step count
  // Early stop after this many steps without improvement; unset: 500 for
  // budget "thorough", none otherwise (the autotuner keeps a thorough
  // budget's stop when it sets a step count).
  std::optional<int> early_stop_patience;
  std::optional<double> lr;
  std::optional<int> hidden, depth, n_octaves;
  bool discrepancy = true;  // Morozov stop (needs sigma > 0)
  // Two stages (half the grid for 30 % of the steps, then native at lr / 2;
  // spectral: at the same lr)
  // when every axis has >= 16 cells; the model (a built-in one kept on its
  // grid by GridKeptOperator) sees the coarse field through a prolongation
  // (operators/prolonged.h).
  bool multiscale = false;
  // The fields' starting constants (one per field) instead of the best ones
  // fitted to the data (empty): a batch starts every problem at one set, so
  // their fields share heads (auto_batch.h). The data weight stays the
  // misfit of the fitted constants.
  std::vector<double> start;
  // With start: the heads' scales (one per field) instead of their own
  // (head_scales), so that the batch's heads are one.
  std::vector<double> start_scales;
  double discrepancy_tau = 1.0;
  uint64_t seed = 0;
};

struct AutoDecision {
  std::string key, value, why;
};

struct AutoProblem {
  InverseProblem problem;
  Curriculum curriculum;
  std::vector<std::string> fields;    // the field names ("x" for one)
  std::vector<PriorSpec> priors;      // one per field
  std::vector<double> constant_fits;  // where each field starts
  std::vector<double> head_scales;    // what its head spans (the header's head)
  double noise_std = 0;
  bool noise_estimated = false;
  uint64_t seed = 0;
  std::vector<AutoDecision> decisions;
  // The model's trainable parameters as given (Operator::parameters): every
  // solve starts from them, and trains the model's leaves in place.
  std::vector<fk::Tensor> operator_start;
  // Puts the model's trainable parameters back to operator_start.
  void reset_operator() const;
  // Solver(problem, curriculum, so).run() with so.seed = seed (always), the
  // model's parameters reset first.
  Result solve(SolverOptions so = {}) const;
};

// from_forward's domain for a grid: isotropic cells, the longest axis 1
// (where the built-in models a caller builds for it are sampled).
Domain isotropic_domain(const fk::Dims& shape);

// op: the model at `shape` (its output_shape(shape) is the measurement's
// shape). Calls the model about 40 times forward (the constant fit) and runs
// a 25-step probe when the prior has penalties. Throws fk::Error on a
// measurement of the wrong shape, non-finite data or model outputs, and bad
// options (each named).
AutoProblem auto_problem(OperatorPtr op, const fk::Dims& shape, Measurement measurement,
                         const AutoOptions& options = {});

}  // namespace nefi
