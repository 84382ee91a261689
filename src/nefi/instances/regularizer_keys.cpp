#include "nefi/instances/regularizer_keys.h"

#include <cmath>

#include "fk/error.h"

namespace nefi {

double weight_key(const Params& p, const std::string& key) {
  const double w = p.d(key);
  FK_CHECK(std::isfinite(w) && w >= 0, "config key '" + key + "'", "a weight >= 0",
           Params::render(w));
  return w;
}

double noise_std_key(const Params& p) {
  const double sigma = p.d("noise_std");
  FK_CHECK(std::isfinite(sigma) && sigma >= 0, "config key 'noise_std'", "a noise level >= 0",
           Params::render(sigma));
  return sigma;
}

double tv_eps_key(const Params& p) {
  const double eps = p.d("tv_eps");
  FK_CHECK(std::isfinite(eps) && eps > 0, "config key 'tv_eps'", "a smoothing > 0",
           Params::render(eps));
  return eps;
}

TVOptions tv_options_from(const Params& p) {
  TVOptions tv;
  tv.eps = tv_eps_key(p);
  tv.use_spacing = true;
  return tv;
}

}  // namespace nefi
