#pragma once
// The thermal_tomography instance's configuration: its keys, declared once
// with their defaults (the reference's paper config,
// configs/thermal_tomography_paper.yaml), and TomographyConfig, which reads
// each key once and checks every value before anything is simulated or
// solved. A bad value is an fk::Error naming its key.
#include <vector>

#include "fk/shape.h"
#include "nefi/field/neural_field.h"
#include "nefi/instances/thermal/explicit_simulator.h"
#include "nefi/instances/thermal/metrics.h"
#include "nefi/instances/thermal/ppt.h"
#include "nefi/instances/thermal/scenes.h"
#include "nefi/instances/thermal/tsr.h"
#include "nefi/losses/regularizers.h"
#include "nefi/operators/heat/heat_operator.h"
#include "nefi/params.h"
#include "nefi/solve/curriculum.h"

namespace nefi::thermal {

// Every key of the instance with its default and a one-line doc.
Params tomography_params();

struct TomographyConfig {
  fk::Dims grid;               // cells (nx, ny, nz); z is depth
  std::vector<double> extent;  // physical (Lx, Ly, H)
  HeatConfig heat;             // the inversion operator
  ExplicitHeatConfig simulator;
  int64_t sim_supersample = 1;  // the simulator's grid refinement
  SceneConfig scene;
  double noise_std = 0;                                 // relative to the clean surface maximum
  double alpha_min = 0, alpha_max = 0, alpha_init = 0;  // the bounded α head
  NeuralFieldConfig field;
  Curriculum nefty_curriculum, grid_curriculum;
  TVOptions tv;
  double tv_weight = 0;
  VolumeMetricOptions metrics;
  TsrOptions tsr;
  PptOptions ppt;
  double frame_interval = 0;        // time between observed frames (dt * frame_stride)
  std::vector<double> frame_times;  // the observed frames' times
  // The scene prior of the tsr and ppt α volumes where they are blind: the
  // mid defect α over twice the mid half-thickness.
  double prior_defect_alpha = 0, prior_thickness = 0;
  // pinn_soft (pinn_soft.h): the temperature network, its collocation
  // points and the penalty weights; one constant-lr Adam stage.
  struct Pinn {
    int hidden = 128, depth = 5, n_octaves = 0;
    int64_t collocation = 24576;
    double lambda_pde = 1, lambda_ic = 1;
  } pinn;
  Curriculum pinn_curriculum;

  // Reads every key of `p` once and checks it.
  static TomographyConfig from(const Params& p);
};

}  // namespace nefi::thermal
