#pragma once
// Independent references for the convolution tests (conv_test.cpp,
// conv_variants_test.cpp): random coordinates, hypercube offsets written out
// without the library, and a plain-loop convolution over a dense grid.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <set>
#include <vector>

#include "fk/fk.h"
#include "fk/test_util.h"

namespace minkowski::conv_ref {

using Rows = std::vector<std::vector<int32_t>>;  // [batch, x_1..x_D]

// Distinct random coordinates, multiples of ts, in [-range, range] * ts.
inline Rows random_rows(int d, int n, int range, int ts, int batches, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-range, range), ub(0, batches - 1);
  std::set<std::vector<int32_t>> seen;
  Rows r;
  while (static_cast<int>(r.size()) < n) {
    std::vector<int32_t> c(d + 1);
    c[0] = ub(g);
    for (int a = 1; a <= d; ++a) c[a] = u(g) * ts;
    if (seen.insert(c).second) r.push_back(c);
  }
  return r;
}

inline fk::Tensor to_tensor(const Rows& r) {
  std::vector<int32_t> v;
  for (const auto& c : r) v.insert(v.end(), c.begin(), c.end());
  int64_t w = r.empty() ? 1 : static_cast<int64_t>(r[0].size());
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(r.size()), w});
}

inline Rows from_tensor(const fk::Tensor& t) {
  auto v = t.to_vector<int32_t>();
  int64_t w = t.size(1);
  Rows r;
  for (int64_t i = 0; i < t.size(0); ++i)
    r.emplace_back(v.begin() + i * w, v.begin() + (i + 1) * w);
  return r;
}

// Hypercube offsets, written out independently: axis 0 fastest; odd centered.
inline std::vector<std::vector<int>> cube_offsets(int d, int k, int dil, int ts) {
  int vol = 1;
  for (int a = 0; a < d; ++a) vol *= k;
  std::vector<std::vector<int>> o(vol, std::vector<int>(d));
  for (int i = 0; i < vol; ++i) {
    int rem = i;
    for (int a = 0; a < d; ++a) {
      int idx = rem % k;
      rem /= k;
      o[i][a] = (k % 2 ? idx - k / 2 : idx) * dil * ts;
    }
  }
  return o;
}

// A dense grid of features over a bounding box (batch x cells x channels),
// zero where no input exists.
struct Grid {
  int d, c, margin;
  std::vector<int> lo, size;
  int batches;
  std::vector<double> v;
  Grid(const Rows& rows, const std::vector<double>& feats, int channels, int margin_)
      : d(static_cast<int>(rows[0].size()) - 1), c(channels), margin(margin_) {
    lo.assign(d, 1 << 30);
    std::vector<int> hi(d, -(1 << 30));
    batches = 0;
    for (const auto& r : rows) {
      batches = std::max(batches, r[0] + 1);
      for (int a = 0; a < d; ++a)
        lo[a] = std::min(lo[a], r[a + 1]), hi[a] = std::max(hi[a], r[a + 1]);
    }
    size.resize(d);
    int64_t cells = 1;
    for (int a = 0; a < d; ++a) {
      lo[a] -= margin;
      size[a] = hi[a] + margin - lo[a] + 1;
      cells *= size[a];
    }
    v.assign(batches * cells * c, 0.0);
    for (size_t i = 0; i < rows.size(); ++i) {
      int64_t at = index(rows[i][0], rows[i].data() + 1);
      for (int x = 0; x < c; ++x) v[at * c + x] = feats[i * c + x];
    }
  }
  int64_t index(int b, const int32_t* x) const {
    if (b < 0 || b >= batches) return -1;
    int64_t f = b;
    for (int a = 0; a < d; ++a) {
      int64_t q = x[a] - lo[a];
      if (q < 0 || q >= size[a]) return -1;
      f = f * size[a] + q;
    }
    return f;
  }
};

// out[o] = sum_k sum_cin grid[o + sign*off_k][cin] W[k][cin][cout]
inline std::vector<double> reference_conv(const Rows& in, const std::vector<double>& feats, int cin,
                                          const Rows& out, const std::vector<double>& w, int cout,
                                          const std::vector<std::vector<int>>& offs, int sign) {
  int margin = 1;
  for (const auto& o : offs)
    for (int v : o) margin = std::max(margin, std::abs(v));
  Grid g(in, feats, cin, margin);
  int d = g.d;
  std::vector<double> r(out.size() * cout, 0.0);
  for (size_t o = 0; o < out.size(); ++o)
    for (size_t k = 0; k < offs.size(); ++k) {
      std::vector<int32_t> q(d);
      for (int a = 0; a < d; ++a) q[a] = out[o][a + 1] + sign * offs[k][a];
      int64_t at = g.index(out[o][0], q.data());
      if (at < 0) continue;
      for (int ci = 0; ci < cin; ++ci)
        for (int co = 0; co < cout; ++co)
          r[o * cout + co] += g.v[at * cin + ci] * w[(k * cin + ci) * cout + co];
    }
  return r;
}

// grad_W[k][ci][co] = sum_o F[o + off_k][ci] G[o][co], on the dense grid.
inline std::vector<double> reference_weight_grad(const Rows& rows, const std::vector<double>& f,
                                                 int cin, const std::vector<double>& g, int cout,
                                                 const std::vector<std::vector<int>>& offs) {
  Grid grid(rows, f, cin, 1);
  std::vector<double> r(offs.size() * cin * cout, 0.0);
  for (size_t o = 0; o < rows.size(); ++o)
    for (size_t k = 0; k < offs.size(); ++k) {
      std::vector<int32_t> q(grid.d);
      for (int a = 0; a < grid.d; ++a) q[a] = rows[o][a + 1] + offs[k][a];
      int64_t at = grid.index(rows[o][0], q.data());
      if (at < 0) continue;
      for (int ci = 0; ci < cin; ++ci)
        for (int co = 0; co < cout; ++co)
          r[(k * cin + ci) * cout + co] += grid.v[at * cin + ci] * g[o * cout + co];
    }
  return r;
}

struct Case {
  Rows rows;
  fk::Tensor f, w;
  std::vector<double> fv, wv;
};

inline Case make_case(int d, int n, int range, int ts, int cin, int cout, int vol, unsigned seed,
                      int batches = 2) {
  Case c;
  c.rows = random_rows(d, n, range, ts, batches, seed);
  c.f = fk::test::random_tensor({n, cin}, fk::DType::F64, -1, 1, seed + 1);
  c.w = fk::test::random_tensor({vol, cin, cout}, fk::DType::F64, -1, 1, seed + 2);
  c.fv = c.f.to_vector<double>();
  c.wv = c.w.to_vector<double>();
  return c;
}

}  // namespace minkowski::conv_ref
