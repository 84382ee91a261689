#pragma once
// What a campaign unit fixes about a run, shared by the sequential and the
// batched halves of a campaign so their rows pair: the unit's scene class in
// the instance's parameters, and the row's identity and environment fields.
#include <unistd.h>

#include <cstdint>
#include <string>

#include "fk/parallel.h"
#include "nefi/bench/campaign.h"

namespace nefi::bench::detail {

inline std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// `p` with the unit's scene class, where the instance takes one.
inline Params unit_params(Params p, const Unit& u) {
  if (p.has("scene")) p.set_value("scene", u.cls);
  return p;
}

// A row of `method` on `u` with its identity and environment filled in.
inline Row start_row(const Unit& u, const std::string& method, int64_t batch_size = 1) {
  Row r;
  r.unit = u.index;
  r.method = method;
  r.cls = u.cls;
  r.sample = u.sample;
  r.data_seed = u.data_seed;
  r.seed = u.seed;
  r.threads = fk::get_num_threads();
  r.host = host_name();
  r.batch_size = batch_size;
  return r;
}

}  // namespace nefi::bench::detail
