#pragma once
// The 2^D grid corners of a continuous point and their multilinear weights,
// shared by interpolation (which gathers from the corners) and splatting (its
// transpose, which scatters to them), so both read one definition:
//   with ts_j the tensor stride on axis j and q = (batch, q_1..q_D),
//   corner_j = floor(q_j / ts_j) * ts_j + bit_j * ts_j
//   (batch = round(q_0), half to even as torch.round and TensorField.sparse),
//   weight    = prod_j (1 - |q_j - corner_j| / ts_j).
// Corner `bits` is bit j set <=> the upper corner on axis j.
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "fk/error.h"

namespace minkowski::multilinear {

constexpr int kMaxDim = 16;
// [-2^31, 2^31 - 1], the int32 values (a NaN is not within).
inline bool within_int32(double v) {
  return v >= -2147483648.0 && v <= 2147483647.0;
}

// Throws unless point i (1+D values) has a finite batch index within int32
// (rounded half to even, as the reference: float arithmetic's 1 - 1e-7 is
// batch 1) and
// both corners of every axis, floor(q / ts) * ts and one stride above, fit
// int32.
inline void check_point(const double* q, const std::vector<int32_t>& ts, int64_t i,
                        const char* where) {
  FK_CHECK(within_int32(std::nearbyint(q[0])), where,
           "a finite batch index within int32 in column 0 (point " + fk::to_text(i) + ")",
           fk::to_text(q[0]));
  for (size_t a = 0; a < ts.size(); ++a) {
    const double t = ts[a], cell = std::floor(q[a + 1] / t);
    FK_CHECK(within_int32(cell * t) && within_int32((cell + 1) * t), where,
             "finite coordinates within int32 (point " + fk::to_text(i) + ")",
             fk::to_text(q[a + 1]));
  }
}

struct Corners {
  std::array<int32_t, kMaxDim + 1> base;  // batch, floor(q / ts) * ts per axis
  std::array<double, kMaxDim> frac;       // (q - base) / ts per axis, in [0, 1)
};

inline Corners corners_of(const double* q, const std::vector<int32_t>& ts) {
  Corners c;
  c.base[0] = static_cast<int32_t>(std::nearbyint(q[0]));
  for (size_t a = 0; a < ts.size(); ++a) {
    const double t = ts[a], cell = std::floor(q[a + 1] / t);
    c.base[a + 1] = static_cast<int32_t>(cell * t);
    c.frac[a] = (q[a + 1] - cell * t) / t;
  }
  return c;
}

struct Corner {
  double weight, dist2;  // multilinear weight; squared distance to q in strides
};

// Writes corner `bits` (batch, x_1..x_D) to `at` and returns its weight.
inline Corner corner(const Corners& c, const std::vector<int32_t>& ts, uint32_t bits, int32_t* at) {
  Corner r{1, 0};
  at[0] = c.base[0];
  for (size_t a = 0; a < ts.size(); ++a) {
    const bool up = (bits >> a) & 1u;
    at[a + 1] = c.base[a + 1] + (up ? ts[a] : 0);
    const double dist = up ? 1 - c.frac[a] : c.frac[a];
    r.weight *= 1 - dist;
    r.dist2 += dist * dist;
  }
  return r;
}

}  // namespace minkowski::multilinear
