#pragma once
// Plain-loop references shared by the reduction tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fk/cpu_isa.h"
#include "fk/fk.h"
#include "fk/knobs.h"

namespace fk::reduce_ref {

using Fn = testing::TensorFn;
using Group = std::vector<double>;

// Plain reference: the elements of a row-major array grouped by output
// position (kept coordinates, row-major), each group in increasing order of
// the reduced coordinates.
inline std::vector<Group> groups(const std::vector<double>& v, const std::vector<int64_t>& shape,
                                 const std::vector<bool>& reduced) {
  int64_t outputs = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) outputs *= shape[d];
  }
  std::vector<Group> out(static_cast<size_t>(outputs));
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t rem = static_cast<int64_t>(i), o = 0, scale = 1;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      int64_t c = rem % shape[d];
      rem /= shape[d];
      if (!reduced[d]) {
        o += c * scale;
        scale *= shape[d];
      }
    }
    out[static_cast<size_t>(o)].push_back(v[i]);
  }
  return out;
}

inline std::vector<double> fold(const std::vector<Group>& gs,
                                const std::function<double(const Group&)>& f) {
  std::vector<double> r;
  for (const Group& g : gs) r.push_back(f(g));
  return r;
}

inline double ref_sum(const Group& g) {
  double s = 0;
  for (double v : g) s += v;
  return s;
}
inline double ref_prod(const Group& g) {
  double s = 1;
  for (double v : g) s *= v;
  return s;
}
inline double ref_max(const Group& g) {
  return *std::max_element(g.begin(), g.end());
}
inline double ref_min(const Group& g) {
  return *std::min_element(g.begin(), g.end());
}
inline double ref_var(const Group& g, int correction) {
  double m = ref_sum(g) / static_cast<double>(g.size()), s = 0;
  for (double v : g) s += (v - m) * (v - m);
  return s / static_cast<double>(static_cast<int>(g.size()) - correction);
}
inline double ref_norm(const Group& g, double p) {
  double s = 0;
  for (double v : g) {
    if (std::isinf(p)) {
      s = std::max(s, std::abs(v));
    } else {
      s += std::pow(std::abs(v), p);
    }
  }
  return std::isinf(p) ? s : std::pow(s, 1.0 / p);
}
inline double ref_lse(const Group& g) {
  double s = 0;
  for (double v : g) s += std::exp(v);
  return std::log(s);
}

inline Dims expected_shape(const std::vector<int64_t>& shape, const std::vector<bool>& reduced,
                           bool keepdim) {
  Dims s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) {
      s.push_back(shape[d]);
    } else if (keepdim) {
      s.push_back(1);
    }
  }
  return s;
}

struct DimsCase {
  Dims dims;
  std::vector<bool> reduced;
};

inline const std::vector<DimsCase>& dims_cases() {
  static const std::vector<DimsCase> cases = {
      {{}, {true, true, true}},      {{0}, {true, false, false}},   {{1}, {false, true, false}},
      {{-1}, {false, false, true}},  {{0, 2}, {true, false, true}}, {{1, 0}, {true, true, false}},
      {{-2, 2}, {false, true, true}}};
  return cases;
}

// The documented order of a contiguous f64 run (cpu/fold_lanes.h): 8 lanes
// over full groups of 8, combined as a tree, then the tail; runs longer than
// 32768 (cpu/reduce_block.h's block) folded per block, blocks added in order.
inline double documented_sum(const double* x, int64_t n) {
  double total = 0;
  for (int64_t b0 = 0; b0 < n; b0 += 32768) {
    const int64_t len = std::min<int64_t>(32768, n - b0);
    double l[8] = {};
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) {
      for (int k = 0; k < 8; ++k) l[k] += x[b0 + i + k];
    }
    double a = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for (; i < len; ++i) a += x[b0 + i];
    total = b0 == 0 ? a : total + a;
  }
  return total;
}

// Runs f once per CPU ISA path (FK_CPU_ISA=generic, then avx2: the CPU's
// best, which is generic again on a CPU without AVX2), naming the path.
inline void on_both_isa_paths(const std::function<void(const char*)>& f) {
  for (const char* v : {"generic", "avx2"}) {
    KnobOverride isa("FK_CPU_ISA", v);
    SCOPED_TRACE(std::string("FK_CPU_ISA=") + v + " (" + cpu_isa_name(cpu_isa()) + ")");
    f(v);
  }
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

}  // namespace fk::reduce_ref
