#pragma once
// Independent references for the pooling and broadcast tests: plain loops over
// coordinates looked up in a std::map (no kernel map, no library offsets),
// written from the semantics in pooling.h / global_pooling.h / broadcast.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "fk/fk.h"
#include "fk/thread_count.h"
#include "minkowski/ops/conv_reference.h"

namespace minkowski::pool_ref {

using conv_ref::Rows;
using Offsets = std::vector<std::vector<int>>;  // K x D, already scaled

enum class Mode { Max, Average, Sum };

// For each output row, the input rows at out + offset_k (k ascending), those present.
inline std::vector<std::vector<int>> pairs_by_out(const Rows& in, const Rows& out,
                                                  const Offsets& offs) {
  std::map<std::vector<int32_t>, int> where;
  for (size_t i = 0; i < in.size(); ++i) where[in[i]] = static_cast<int>(i);
  std::vector<std::vector<int>> r(out.size());
  for (size_t o = 0; o < out.size(); ++o)
    for (const auto& off : offs) {
      std::vector<int32_t> q = out[o];
      for (size_t a = 0; a < off.size(); ++a) q[a + 1] += off[a];
      auto it = where.find(q);
      if (it != where.end()) r[o].push_back(it->second);
    }
  return r;
}

struct Pooled {
  std::vector<double> out;  // rows x c
  std::vector<int> argmax;  // rows x c (Max), -1 where no input
};

// Reduces rows of f (n x c) over each output's list of input rows.
inline Pooled reduce(const std::vector<std::vector<int>>& lists, const std::vector<double>& f,
                     int c, Mode mode) {
  Pooled p;
  p.out.assign(lists.size() * c, 0.0);
  p.argmax.assign(lists.size() * c, -1);
  for (size_t o = 0; o < lists.size(); ++o)
    for (int x = 0; x < c; ++x) {
      double acc = mode == Mode::Max ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int i : lists[o]) {
        double v = f[i * c + x];
        if (mode != Mode::Max) {
          acc += v;
        } else if (v > acc) {
          acc = v;
          p.argmax[o * c + x] = i;
        }
      }
      if (lists[o].empty()) acc = 0;
      if (mode == Mode::Average && !lists[o].empty()) acc /= static_cast<double>(lists[o].size());
      p.out[o * c + x] = acc;
    }
  return p;
}

// The gradient of reduce w.r.t. f (n_in rows) for an output gradient g.
inline std::vector<double> reduce_grad(const std::vector<std::vector<int>>& lists, const Pooled& p,
                                       const std::vector<double>& g, int c, int n_in, Mode mode) {
  std::vector<double> r(static_cast<size_t>(n_in) * c, 0.0);
  for (size_t o = 0; o < lists.size(); ++o)
    for (int x = 0; x < c; ++x) {
      if (mode == Mode::Max) {
        int a = p.argmax[o * c + x];
        if (a >= 0) r[a * c + x] += g[o * c + x];
        continue;
      }
      for (int i : lists[o])
        r[i * c + x] += g[o * c + x] / (mode == Mode::Average ? lists[o].size() : 1.0);
    }
  return r;
}

// floor(c / t) * t per spatial axis, deduplicated.
inline std::set<std::vector<int32_t>> strided_set(const Rows& in, int t) {
  std::set<std::vector<int32_t>> s;
  for (auto r : in) {
    for (size_t a = 1; a < r.size(); ++a)
      r[a] = static_cast<int32_t>(std::floor(r[a] / static_cast<double>(t))) * t;
    s.insert(r);
  }
  return s;
}

// Hypercross offsets written out: center, then per axis +1..+r, -r..-1.
inline Offsets cross_offsets(int d, int k, int scale) {
  Offsets o{std::vector<int>(d, 0)};
  for (int a = 0; a < d; ++a) {
    for (int s = 1; s <= k / 2; ++s) {
      o.push_back(std::vector<int>(d, 0));
      o.back()[a] = s * scale;
    }
    for (int s = -(k / 2); s <= -1; ++s) {
      o.push_back(std::vector<int>(d, 0));
      o.back()[a] = s * scale;
    }
  }
  return o;
}

inline std::vector<double> round_to(const std::vector<double>& v, fk::DType dt) {
  return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}).to(dt).to_vector<double>();
}

// Runs fn at 1, 2 and 3 threads and restores the count.
inline void at_threads(const std::function<void(int)>& fn) {
  const fk::test::ThreadCount threads(1);
  for (int t : {1, 2, 3}) {
    threads.set(t);
    fn(t);
  }
}

inline bool bitwise_equal(const fk::Tensor& a, const fk::Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  fk::Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

}  // namespace minkowski::pool_ref
