#include "nefi/diagnostics/probes.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "fk/error.h"
#include "fk/interrupt.h"

namespace nefi::diagnostics {

ProbeReport probe(const LinearMap& J, int probes, double sigma_max, uint64_t seed, bool exact) {
  FK_CHECK(probes >= 1, "nefi::diagnostics::probe", "at least one probe", fk::to_text(probes));
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  std::normal_distribution<double> normal;
  ProbeReport r;
  r.probes = probes;
  r.exact = exact;
  r.sensitivity.assign(J.n, 0.0);
  for (int64_t i = 0; exact && i < J.n; ++i) {
    fk::poll_interrupt();  // an operator application each: the host's Ctrl-C
    Vec e(J.n, 0.0);
    e[i] = 1;
    for (double y : J.apply(e)) r.sensitivity[i] += y * y;
  }
  for (int p = 0; !exact && p < probes; ++p) {
    fk::poll_interrupt();  // an operator application each: the host's Ctrl-C
    Vec z(J.m);
    for (double& x : z) x = (rng() >> 63) ? 1.0 : -1.0;
    const Vec g = J.adjoint(z);
    for (int64_t i = 0; i < J.n; ++i) r.sensitivity[i] += g[i] * g[i] / probes;
  }
  const double top = *std::max_element(r.sensitivity.begin(), r.sensitivity.end());
  int64_t blind = 0;
  for (double s : r.sensitivity) blind += s <= 1e-6 * top;
  r.blind_fraction = static_cast<double>(blind) / J.n;
  int dark = 0;
  for (int p = 0; p < probes; ++p) {
    fk::poll_interrupt();  // an operator application each: the host's Ctrl-C
    Vec v(J.n);
    double vv = 0;
    for (double& x : v) {
      x = normal(rng);
      vv += x * x;
    }
    double jj = 0;
    for (double y : J.apply(v)) jj += y * y;
    const double ratio = sigma_max > 0 ? jj / (sigma_max * sigma_max * vv) : 0;
    r.visible_mean += ratio / probes;
    dark += ratio < 1e-4;
  }
  r.dark_fraction = static_cast<double>(dark) / probes;
  return r;
}

}  // namespace nefi::diagnostics
