#pragma once
// Random probes of a linearized operator J (nefi.md §2.9):
//   sensitivity   diag(J^T J), each cell's Jacobian column norm squared, by
//                 Hutchinson's estimator mean_z (J^T z)^2 over Rademacher z in
//                 the data space (E[z z^T] = I: unbiased; exact when each
//                 cell is read by one data row at most, e.g. a sampling mask)
//   blind cells   the share of cells whose sensitivity is below 1e-6 of the
//                 largest: parts of the field the data do not see
//   null-space    Gaussian directions v in the field space: mean of
//   probes        |J v|^2 / (s1^2 |v|^2) (1 for an isometry, tr(J^T J) / (n s1^2)
//                 in expectation) and the share with |J v| < 1e-2 s1 |v|
//                 (directions the data barely see)
// Each probe costs one J^T product and one J product. With `exact` the
// sensitivity is each column's norm squared, |J e_i|^2, at one J product a
// cell (small fields; the reference's sensitivity_map(exact=True)).
#include <cstdint>
#include <vector>

#include "nefi/diagnostics/lanczos.h"

namespace nefi::diagnostics {

struct ProbeReport {
  int probes = 0;
  bool exact = false;               // sensitivity from every column, not Hutchinson
  std::vector<double> sensitivity;  // length n
  double blind_fraction = 0;
  double visible_mean = 0;
  double dark_fraction = 0;
};

// sigma_max: J's largest singular value (leading_singular_values).
ProbeReport probe(const LinearMap& J, int probes, double sigma_max, uint64_t seed,
                  bool exact = false);

}  // namespace nefi::diagnostics
