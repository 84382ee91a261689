#include "fk/ops/reduce.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "fk/autograd.h"
#include "fk/cpu_isa.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/ops/binary.h"
#include "fk/ops/cpu/dispatch.h"
#include "fk/ops/cpu/exp_shifted_sum.h"
#include "fk/ops/cpu/extrema.h"
#include "fk/ops/cpu/fold_lanes.h"
#include "fk/ops/cpu/lane_sums.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cpu/vec_math.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/ops/unary.h"
#include "fk/ops/view.h"
#include "fk/profile.h"

namespace fk {
namespace {

// Rows longer than this are reduced in blocks of this many elements whose
// partial results are combined in block order. The split depends on the shape
// only, so results do not depend on the thread count.
constexpr int64_t kReduceBlock = 32768;
// Output lanes handled together when the reduced dims are not innermost, so
// that each step reads a contiguous run of the input (accumulating rows).
constexpr int64_t kLaneBlock = 256;

template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, c64> || std::is_same_v<T, c128>;

template <typename T>
struct RealOf {
  using type = T;
};
template <typename T>
struct RealOf<std::complex<T>> {
  using type = T;
};

// Accumulator type: f32 and c64 accumulate in double precision.
template <typename T>
struct SumAcc {
  using type = T;
};
template <>
struct SumAcc<float> {
  using type = double;
};
template <>
struct SumAcc<c64> {
  using type = c128;
};

using cpu::check_cpu;

struct ReducePlan {
  Dims out_shape;   // with keepdim applied
  Dims keep_shape;  // reduced dims as size 1
  Dims order;       // permutation: kept dims first, reduced dims last
  Dims dims;        // the reduced dims, wrapped and sorted
  bool reduced[kMaxDims] = {};
  int64_t outer = 1, inner = 1;
};

ReducePlan plan_reduce(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  int n = t.dim();
  ReducePlan p;
  if (dims.empty()) {
    for (int i = 0; i < n; ++i) p.reduced[i] = true;
  } else {
    for (int64_t d : dims) {
      int w = wrap_dim(d, n, op);
      FK_CHECK(!p.reduced[w], op, "distinct dimensions", dims.str());
      p.reduced[w] = true;
    }
  }
  Dims red_order;
  for (int i = 0; i < n; ++i) {
    if (p.reduced[i]) {
      red_order.push_back(i);
      p.inner *= t.shape()[i];
      p.keep_shape.push_back(1);
      if (keepdim) p.out_shape.push_back(1);
    } else {
      p.order.push_back(i);
      p.outer *= t.shape()[i];
      p.keep_shape.push_back(t.shape()[i]);
      p.out_shape.push_back(t.shape()[i]);
    }
  }
  p.dims = red_order;
  for (int64_t d : red_order) p.order.push_back(d);
  return p;
}

// The input of a reduction as a contiguous [A, R, C] block: output element
// (a, c) reduces src[a, :, c]. A dense input (contiguous, or a permutation of
// a contiguous layout such as a transpose) whose reduced dims form one run in
// memory order is read in place: C == 1 when they are innermost (rows),
// C > 1 when they are leading or middle dims (rows are accumulated, no
// transposed copy). Any other layout is copied once into rows.
struct Reduction {
  ReducePlan plan;
  Tensor src;
  int64_t A = 1, R = 1, C = 1;
  Dims kept_mem;  // the kept dims in the order the kernel writes them (memory order)

  // A buffer the kernel writes (kept dims in memory order).
  Tensor alloc(DType dtype) const {
    Dims shape;
    for (int64_t d : kept_mem) shape.push_back(plan.keep_shape[static_cast<int>(d)]);
    return empty(shape, {dtype, src.device()});
  }
  // The buffer as the result: kept dims back in their logical order, keepdim applied.
  Tensor result(const Tensor& buf) const {
    Dims back = Dims::filled(kept_mem.size(), 0);
    bool identity = true;
    for (int i = 0; i < kept_mem.size(); ++i) {
      int rank = 0;  // position of kept_mem[i] among the kept dims in logical order
      for (int j = 0; j < kept_mem.size(); ++j) rank += kept_mem[j] < kept_mem[i];
      back[rank] = i;
      identity = identity && rank == i;
    }
    Tensor logical = identity ? buf : buf.permute(back).contiguous();
    return logical.reshape(plan.out_shape);
  }
};

// A permutation listing t's dims from the largest stride to the smallest (ties
// in dim order): t.permute(result) is contiguous when t is dense.
Dims memory_order(const Tensor& t) {
  Dims order;
  for (int i = 0; i < t.dim(); ++i) order.push_back(i);
  std::stable_sort(order.data(), order.data() + order.size(), [&](int64_t a, int64_t b) {
    return t.strides()[static_cast<int>(a)] > t.strides()[static_cast<int>(b)];
  });
  return order;
}

Reduction prepare(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  check_cpu(t, op);
  Reduction r;
  r.plan = plan_reduce(t, dims, keepdim, op);
  const ReducePlan& p = r.plan;
  Tensor x = t.detach();  // internal views and copies record no autograd history
  Dims mem = memory_order(x);
  Tensor dense = x.permute(mem);
  if (x.numel() > 0 && dense.is_contiguous()) {
    // Positions (in memory order) of the first and last reduced dims of size > 1.
    int first = -1, last = -1;
    for (int i = 0; i < mem.size(); ++i) {
      int d = static_cast<int>(mem[i]);
      if (p.reduced[d] && x.shape()[d] > 1) {
        if (first < 0) first = i;
        last = i;
      }
    }
    bool run = true;
    for (int i = first + 1; i < last; ++i) {
      int d = static_cast<int>(mem[i]);
      run = run && (p.reduced[d] || x.shape()[d] == 1);
    }
    if (run) {
      r.src = dense;
      for (int i = 0; i < mem.size(); ++i) {
        int d = static_cast<int>(mem[i]);
        if (!p.reduced[d]) r.kept_mem.push_back(d);
        if (first < 0) {
          r.A *= x.shape()[d];  // nothing to reduce: every element is its own output
        } else if (i < first) {
          r.A *= x.shape()[d];
        } else if (i > last) {
          r.C *= x.shape()[d];
        }
      }
      r.R = p.inner;
      return r;
    }
  }
  r.src = x.permute(p.order).contiguous();
  for (int i = 0; i < x.dim(); ++i) {
    if (!p.reduced[i]) r.kept_mem.push_back(i);
  }
  r.A = p.outer;
  r.R = p.inner;
  return r;
}

// Folds each lane of a contiguous [A, R, C] block with a reducer:
//   Acc init(); void step(Acc&, T value, int64_t r);
//   void merge(Acc& left, const Acc& right);  // right covers later r
//   void finish(int64_t out_index, const Acc&);
// and optionally, for contiguous runs (C == 1):
//   Acc fold_row(const T* x, int64_t n);  // the run x[0..n) in one Acc
//   Acc fold_row(const T* x, int64_t n, int64_t r0);  // elements r0 .. r0 + n
// and for rows of lanes (C > 1):
//   void fold_rows(const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w, Acc* acc);
//     // acc[j] = lane j (< w) of the rows r0 .. r1 at base + r * C
// Every output is accumulated by one thread, by step in increasing r (C > 1:
// the C lanes are independent, so the compiler vectorises across them), by
// fold_rows, or by fold_row (C == 1: 8 partial accumulators in the fixed
// order of cpu/fold_lanes.h); rows longer than kReduceBlock are cut into blocks at
// multiples of kReduceBlock whose partials are merged in block order. The
// split depends on the shape only, so the result is bitwise the same for any
// thread count.
// Lanes j0 .. w of the rows r0 .. r1 at base + r * C, one step at a time
// (acc[j] = lane j): the generic fold of rows of lanes, which the
// reducers' fold_rows fall back to.
template <typename T, typename Red>
void step_rows(const Red& red, const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w,
               typename Red::Acc* acc, int64_t j0 = 0) {
  for (int64_t j = j0; j < w; ++j) acc[j] = red.init();
  for (int64_t r = r0; r < r1; ++r) {
    const T* row = base + r * C;
    for (int64_t j = j0; j < w; ++j) red.step(acc[j], row[j], r);
  }
}

// One contiguous run x[0..n) (elements r0 .. r0 + n of its row) in one Acc.
template <typename T, typename Red>
typename Red::Acc fold_run(const Red& red, const T* x, int64_t n, int64_t r0 = 0) {
  if constexpr (requires { red.fold_row(x, n, r0); }) {
    return red.fold_row(x, n, r0);
  } else if constexpr (requires { red.fold_row(x, n); }) {
    return red.fold_row(x, n);
  } else {
    typename Red::Acc s = red.init();
    for (int64_t i = 0; i < n; ++i) red.step(s, x[i], r0 + i);
    return s;
  }
}

template <typename T, typename Red>
void reduce_block(const T* in, int64_t A, int64_t R, int64_t C, const Red& red) {
  using Acc = typename Red::Acc;
  const int64_t nr = R > kReduceBlock ? (R + kReduceBlock - 1) / kReduceBlock : 1;
  const int64_t nc = (C + kLaneBlock - 1) / kLaneBlock;
  const int64_t tasks = A * nr * nc;
  if (tasks == 0) return;
  if (C == 1 && nr == 1) {  // whole contiguous rows: one task per row, no index arithmetic
    const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(R, 1));
    if (A >= 2 * grain && get_num_threads() > 1) profile::count_launch();
    parallel_for(0, A, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t a = lo; a < hi; ++a) red.finish(a, fold_run(red, in + a * R, R));
    });
    return;
  }
  std::vector<Acc> partial(nr > 1 ? static_cast<size_t>(A * nr * C) : 0);
  const int64_t per_task =
      std::max<int64_t>(1, std::min(R, kReduceBlock) * std::min(C, kLaneBlock));
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / per_task);
  if (tasks >= 2 * grain && get_num_threads() > 1) profile::count_launch();
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    std::array<Acc, kLaneBlock> acc;
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t cb = task % nc, rb = (task / nc) % nr, a = task / (nc * nr);
      const int64_t c0 = cb * kLaneBlock, w = std::min(C, c0 + kLaneBlock) - c0;
      const int64_t r0 = rb * kReduceBlock, r1 = std::min(R, r0 + kReduceBlock);
      const T* base = in + a * R * C + c0;
      if (C == 1) {
        acc[0] = fold_run(red, base + r0, r1 - r0, r0);
      } else if constexpr (requires { red.fold_rows(base, r0, r1, C, w, acc.data()); }) {
        red.fold_rows(base, r0, r1, C, w, acc.data());
      } else {
        step_rows(red, base, r0, r1, C, w, acc.data());
      }
      for (int64_t j = 0; j < w; ++j) {
        if (nr == 1) {
          red.finish(a * C + c0 + j, acc[j]);
        } else {
          partial[(a * nr + rb) * C + c0 + j] = acc[j];
        }
      }
    }
  });
  if (nr == 1) return;
  for (int64_t a = 0; a < A; ++a) {
    for (int64_t c = 0; c < C; ++c) {
      Acc s = partial[(a * nr) * C + c];
      for (int64_t rb = 1; rb < nr; ++rb) red.merge(s, partial[(a * nr + rb) * C + c]);
      red.finish(a * C + c, s);
    }
  }
}

// --- reducers ---------------------------------------------------------------

inline constexpr auto kPlus = [](const auto& a, const auto& b) { return a + b; };
inline constexpr auto kTimes = [](const auto& a, const auto& b) { return a * b; };

template <typename T>
struct SumReducer {
  using Acc = typename SumAcc<T>::type;
  T* out;
  Acc init() const { return Acc(0); }
  void step(Acc& a, T v, int64_t) const { a += static_cast<Acc>(v); }
  // f32 runs: 8 f64 partial sums, so the f64 accumulation (error ~ n eps_f64
  // relative to sum |x|) is kept at the speed of the loads.
  Acc fold_row(const T* x, int64_t n) const {
    return cpu::fold_lanes(
        x, n, Acc(0), [](T v) { return static_cast<Acc>(v); }, kPlus);
  }
  void merge(Acc& a, const Acc& b) const { a += b; }
  void finish(int64_t o, const Acc& a) const { out[o] = static_cast<T>(a); }
};

template <typename T>
struct ProdReducer {
  using Acc = typename SumAcc<T>::type;
  T* out;
  Acc init() const { return Acc(1); }
  void step(Acc& a, T v, int64_t) const { a *= static_cast<Acc>(v); }
  Acc fold_row(const T* x, int64_t n) const {
    return cpu::fold_lanes(
        x, n, Acc(1), [](T v) { return static_cast<Acc>(v); }, kTimes);
  }
  void merge(Acc& a, const Acc& b) const { a *= b; }
  void finish(int64_t o, const Acc& a) const { out[o] = static_cast<T>(a); }
};

template <typename T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return v != v;
  } else {
    return false;
  }
}

// NaN counts as the extreme value (it propagates); among equals the first wins.
template <bool kMax, typename T>
bool better(T v, T best) {
  if (is_nan(v)) return !is_nan(best);
  return kMax ? v > best : v < best;
}

// Extreme value and its first index; either output pointer may be null.
// f32/f64 with `vec` (an AVX2 CPU): runs and rows of lanes go through
// cpu/extrema.h, which finds the same positions without a branch per element;
// the value is then read at the position, so both paths agree bit for bit.
template <typename T, bool kMax>
struct ExtremeReducer {
  static constexpr bool kVector = std::is_same_v<T, float> || std::is_same_v<T, double>;
  struct Acc {
    T best{};
    int64_t index = -1;
  };
  T* values;
  int64_t* indices;
  bool vec = false;
  Acc init() const { return Acc{}; }
  void step(Acc& a, T v, int64_t r) const {
    if (a.index < 0 || better<kMax>(v, a.best)) a = Acc{v, r};
  }
  // n <= kReduceBlock (reduce_block's split), so positions fit the lanes' int32.
  Acc fold_row(const T* x, int64_t n, int64_t r0) const {
    if constexpr (kVector) {
      if (vec && n > 0) {
        const int64_t i = cpu::avx2::first_extreme_run<kMax>(x, n);
        return Acc{x[i], r0 + i};
      }
    }
    Acc a = init();
    for (int64_t i = 0; i < n; ++i) step(a, x[i], r0 + i);
    return a;
  }
  void fold_rows(const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w, Acc* acc) const {
    int64_t done = 0;  // lanes handled by whole vectors
    if constexpr (kVector) {
      if (vec && r1 > r0) {
        int64_t row[kLaneBlock];
        done = cpu::avx2::first_extreme_lanes<kMax>(base + r0 * C, r1 - r0, C, w, row);
        for (int64_t j = 0; j < done; ++j) acc[j] = Acc{base[(r0 + row[j]) * C + j], r0 + row[j]};
      }
    }
    step_rows(*this, base, r0, r1, C, w, acc, done);
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.index >= 0 && (a.index < 0 || better<kMax>(b.best, a.best))) a = b;
  }
  void finish(int64_t o, const Acc& a) const {
    if (values) values[o] = a.best;
    if (indices) indices[o] = a.index;
  }
};

enum class NormKind { One, Two, Inf, General };

// sum |x|, sqrt(sum |x|^2), max |x| or (sum |x|^p)^(1/p); complex T gives real norms.
template <typename T>
struct NormReducer {
  using R = typename RealOf<T>::type;
  using Acc = double;
  R* out;
  NormKind kind;
  double p;
  // |v|^2 in double (std::norm of a float would square in float).
  static double square_mag(T v) {
    if constexpr (kIsComplex<T>) {
      return std::norm(static_cast<c128>(v));
    } else {
      return static_cast<double>(v) * static_cast<double>(v);
    }
  }
  Acc init() const { return 0.0; }
  void step(Acc& a, T v, int64_t) const {
    if (kind == NormKind::Two) {
      a += square_mag(v);
      return;
    }
    double m = static_cast<double>(std::abs(v));
    switch (kind) {
      case NormKind::One:
        a += m;
        break;
      case NormKind::Inf:
        if (m != m || m > a) a = m;
        break;
      default:
        a += std::pow(m, p);
        break;
    }
  }
  // Inf: NaN wins, else the larger (exact, so the lane order cannot show).
  static double max_nan(double a, double b) { return (b != b || b > a) ? b : a; }
  Acc fold_row(const T* x, int64_t n) const {
    auto mag = [](T v) { return static_cast<double>(std::abs(v)); };
    switch (kind) {
      case NormKind::Two:
        return cpu::fold_lanes(x, n, 0.0, square_mag, kPlus);
      case NormKind::One:
        return cpu::fold_lanes(x, n, 0.0, mag, kPlus);
      case NormKind::Inf:
        return cpu::fold_lanes(x, n, 0.0, mag, max_nan);
      case NormKind::General:
        break;
    }
    const double e = p;
    return cpu::fold_lanes(
        x, n, 0.0, [&](T v) { return std::pow(mag(v), e); }, kPlus);
  }
  void merge(Acc& a, const Acc& b) const {
    if (kind != NormKind::Inf) {
      a += b;
    } else if (b != b || b > a) {
      a = b;
    }
  }
  void finish(int64_t o, const Acc& a) const {
    switch (kind) {
      case NormKind::Two:
        out[o] = static_cast<R>(std::sqrt(a));
        break;
      case NormKind::General:
        out[o] = static_cast<R>(std::pow(a, 1.0 / p));
        break;
      default:
        out[o] = static_cast<R>(a);
        break;
    }
  }
};

// Re(conj(d) * e): the real inner product used for |.|^2 of complex deviations.
template <typename M>
double real_dot(const M& d, const M& e) {
  if constexpr (std::is_same_v<M, c128>) {
    return d.real() * e.real() + d.imag() * e.imag();
  } else {
    return d * e;
  }
}

// Shifted sums: each lane keeps K = its first value, sum(x - K) and
// sum |x - K|^2, so the update is two adds (no division) and the deviations
// stay small whatever the offset of the data; m2 = s2 - |s1|^2 / n. Blocks are
// combined with Chan et al.'s pairwise formula. Complex T gives real variances.
template <typename T>
struct VarReducer {
  using R = typename RealOf<T>::type;
  using M = std::conditional_t<kIsComplex<T>, c128, double>;
  struct Acc {
    double n = 0;
    M shift{}, s1{};
    double s2 = 0;
    M mean() const { return shift + s1 / n; }
    double m2() const { return std::max(0.0, s2 - real_dot(s1, s1) / n); }
  };
  R* out;
  double correction;
  Acc init() const { return Acc{}; }
  void step(Acc& a, T v, int64_t) const {
    M x = static_cast<M>(v);
    if (a.n == 0) a.shift = x;
    M d = x - a.shift;
    a.s1 += d;
    a.s2 += real_dot(d, d);
    a.n += 1;
  }
  // Real runs: the same shifted sums (K = x[0]), each over 8 partial sums.
  Acc fold_row(const T* x, int64_t n) const requires(!kIsComplex<T>) {
    Acc a;
    if (n == 0) return a;
    const double k = static_cast<double>(x[0]);
    a.n = static_cast<double>(n);
    a.shift = k;
    a.s1 = cpu::fold_lanes(
        x, n, 0.0, [k](T v) { return static_cast<double>(v) - k; }, kPlus);
    a.s2 = cpu::fold_lanes(
        x, n, 0.0,
        [k](T v) {
          double d = static_cast<double>(v) - k;
          return d * d;
        },
        kPlus);
    return a;
  }
  void merge(Acc& a, const Acc& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    double n = a.n + b.n;
    M ma = a.mean(), d = b.mean() - ma;
    double m2 = a.m2() + b.m2() + real_dot(d, d) * (a.n * b.n / n);
    a = Acc{n, ma + d * (b.n / n), M{}, m2};
  }
  void finish(int64_t o, const Acc& a) const {
    double m2 = a.n > 0 ? a.m2() : 0.0;
    out[o] = static_cast<R>(m2 / std::max(0.0, a.n - correction));
  }
};

// --- shifted exponentials (softmax, logsumexp) -----------------------------

// e = exp(x_i - m) over e[0..n), in place: the AVX2 exp for f32 with `vec`
// (<= 1 ulp, vec_math.h), else std::exp.
template <typename T>
void exp_in_place(T* e, int64_t n, bool vec) {
  if constexpr (std::is_same_v<T, float>) {
    if (vec) return cpu::avx2::apply_f32(cpu::avx2::VecFn::Exp, e, e, n);
  }
  for (int64_t i = 0; i < n; ++i) e[i] = std::exp(e[i]);
}

// sum exp(x_i - m) over the run x[0..n), a buffer of kLaneBlock at a time,
// in the fixed 8-lane order of cpu/lane_sums.h (the result depends on n
// only); softmax (kStore) also keeps each exp(x_i - m) in y. f32 with `vec`:
// the same exps and order in one AVX2 pass (cpu/exp_shifted_sum.h).
template <typename T, bool kStore>
typename SumAcc<T>::type exp_shifted_run(const T* x, T* y, int64_t n, T m, bool vec) {
  using Acc = typename SumAcc<T>::type;
  if constexpr (std::is_same_v<T, float>) {
    if (vec) return cpu::avx2::exp_shifted_sum_f32<kStore>(x, y, n, m);
  }
  cpu::LaneSums<Acc> sums;
  T buf[kLaneBlock];
  for (int64_t at = 0; at < n; at += kLaneBlock) {
    const int64_t len = std::min(kLaneBlock, n - at);
    T* e = buf;
    if constexpr (kStore) e = y + at;
    for (int64_t i = 0; i < len; ++i) e[i] = x[at + i] - m;
    exp_in_place(e, len, vec);
    const int64_t full = len - len % cpu::kFoldLanes;
    sums.add_groups(e, full);
    if (at + len == n) return sums.total(e + full, len - full);
  }
  return Acc(0);
}

// e = exp(x - m) for the R values of each of w lanes (lane j at x + j + r C),
// summed into total[j] in r order (one chain per lane; the lanes are the
// vector); softmax (kStore) also stores e in y.
template <typename T, bool kStore, typename Acc>
void exp_shifted_lanes(const T* x, T* y, int64_t R, int64_t C, int64_t w, const T* m, Acc* total,
                       bool vec) {
  T buf[kLaneBlock];
  for (int64_t r = 0; r < R; ++r) {
    const T* xr = x + r * C;
    T* e = buf;
    if constexpr (kStore) e = y + r * C;
    for (int64_t j = 0; j < w; ++j) e[j] = xr[j] - m[j];
    exp_in_place(e, w, vec);
    for (int64_t j = 0; j < w; ++j) total[j] += e[j];
  }
}

// Online log-sum-exp: keeps the running max m and sum of exp(x - m), rescaled
// when the max grows, so no exp overflows. f32 with `vec` (an AVX2 CPU) takes
// two passes instead, over a run or rows of lanes: the max (NaN noted apart),
// then the f64 sum of the AVX2 exp(x - max) in a fixed order; blocks are
// merged as in the online form.
template <typename T>
struct LogSumExpReducer {
  static constexpr bool kTwoPass = std::is_same_v<T, float>;
  struct Acc {
    double m = -std::numeric_limits<double>::infinity();
    double s = 0;
  };
  T* out;
  bool vec = false;
  Acc init() const { return Acc{}; }
  // The Acc of elements whose max (NaN aside) is m, with `nan` if one was
  // NaN and s the sum of exp(x - m): the online form's special cases.
  static Acc from_max(double m, bool nan, double s) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan_value = std::numeric_limits<double>::quiet_NaN();
    if (nan) return Acc{nan_value, nan_value};
    if (m == -inf) return Acc{};       // every element -inf (or none): the sum is 0
    if (m == inf) return Acc{inf, 1};  // a +inf: the result is +inf
    return Acc{m, s};
  }
  Acc fold_row(const T* x, int64_t n) const requires kTwoPass {
    if (!vec || n == 0) {
      Acc a = init();
      for (int64_t i = 0; i < n; ++i) step(a, x[i], i);
      return a;
    }
    bool nan = false;
    const float m = cpu::avx2::max_ignoring_nan_run(x, n, &nan);
    if (nan || std::isinf(m)) return from_max(m, nan, 0);
    return from_max(m, false, exp_shifted_run<float, false>(x, nullptr, n, m, true));
  }
  void fold_rows(const T* base, int64_t r0, int64_t r1, int64_t C, int64_t w,
                 Acc* acc) const requires kTwoPass {
    if (!vec) return step_rows(*this, base, r0, r1, C, w, acc);
    std::array<float, kLaneBlock> m, shift{};  // {}: as in softmax_kernel
    std::array<bool, kLaneBlock> nan;
    std::array<double, kLaneBlock> total;
    for (int64_t j = 0; j < w; ++j) m[j] = -std::numeric_limits<float>::infinity(), nan[j] = false;
    for (int64_t r = r0; r < r1; ++r) {
      const T* xr = base + r * C;
      for (int64_t j = 0; j < w; ++j) {
        nan[j] = nan[j] || xr[j] != xr[j];
        m[j] = xr[j] > m[j] ? xr[j] : m[j];
      }
    }
    for (int64_t j = 0; j < w; ++j) {
      shift[j] = std::isinf(m[j]) ? 0.0f : m[j];  // avoids inf - inf; such lanes are special
      total[j] = 0;
    }
    exp_shifted_lanes<float, false>(base + r0 * C, nullptr, r1 - r0, C, w, shift.data(),
                                    total.data(), true);
    for (int64_t j = 0; j < w; ++j) acc[j] = from_max(m[j], nan[j], total[j]);
  }
  void step(Acc& a, T v_in, int64_t) const {
    double v = static_cast<double>(v_in);
    if (v != v) {
      a.m = a.s = v;
      return;
    }
    if (v == -std::numeric_limits<double>::infinity()) return;
    if (v > a.m) {
      a.s = a.s * std::exp(a.m - v) + 1.0;
      a.m = v;
    } else {
      a.s += v == a.m ? 1.0 : std::exp(v - a.m);
    }
  }
  void merge(Acc& a, const Acc& b) const {
    if (a.m != a.m || b.m != b.m) {
      a.m = a.s = std::numeric_limits<double>::quiet_NaN();
      return;
    }
    if (b.s == 0) return;
    if (a.s == 0) {
      a = b;
      return;
    }
    double m = std::max(a.m, b.m);
    a.s = (a.m == m ? a.s : a.s * std::exp(a.m - m)) + (b.m == m ? b.s : b.s * std::exp(b.m - m));
    a.m = m;
  }
  void finish(int64_t o, const Acc& a) const {
    out[o] = a.s == 0 ? -std::numeric_limits<T>::infinity() : static_cast<T>(a.m + std::log(a.s));
  }
};

// --- helpers ----------------------------------------------------------------

// The dtype an op computes in when its result is inexact (mean, norm, ...).
DType inexact_type(DType t) {
  return is_integral(t) ? DType::F32 : compute_type(t);
}

Tensor keep(const Tensor& g, const ReducePlan& p) {
  return g.reshape(p.keep_shape);
}

// A, R, C of a contiguous tensor split around one dim (0-dim tensors: 1, 1, 1).
struct Split {
  int64_t A = 1, R = 1, C = 1;
};
Split split_at(const Dims& shape, int d) {
  Split s;
  if (shape.size() == 0) return s;
  for (int i = 0; i < d; ++i) s.A *= shape[i];
  s.R = shape[d];
  for (int i = d + 1; i < shape.size(); ++i) s.C *= shape[i];
  return s;
}

void check_nonempty(const Reduction& r, const char* op, const Tensor& t) {
  FK_CHECK(r.R > 0 || r.A * r.C == 0, op, "a non-empty reduction",
           "shape " + t.shape().str() + " reduced over " + r.plan.dims.str());
}

// --- sum ----------------------------------------------------------------------

// CUDA: reduced dims moved last and made contiguous, then one deterministic
// row-reduction kernel (one block per output, fixed-order tree). `indices`
// (optional) receives the first-occurrence position of max/min within the
// reduced block.
Tensor reduce_cuda(const Tensor& t, const Dims& dims, bool keepdim, int code, const char* op,
                   Tensor* indices = nullptr) {
  const ReducePlan p = plan_reduce(t, dims, keepdim, op);
  const int64_t outer = p.outer, inner = p.inner;
  FK_CHECK(inner > 0 || code == cuda::kReduceSum || code == cuda::kReduceProd || outer == 0, op,
           "a non-empty reduction", "shape " + t.shape().str() + " reduced over " + dims.str());
  Tensor src = t.detach().permute(p.order).contiguous();
  auto out_dtype = static_cast<DType>(cuda::reduce_out_dtype(code, static_cast<int>(t.dtype())));
  Tensor out = empty(p.out_shape, {out_dtype, t.device()});
  cuda::launch_reduce_lastdim(code, static_cast<int>(t.dtype()), src.data_ptr(), out.data_ptr(),
                              outer, inner, cuda_ops::stream_of(t));
  if (indices) {
    *indices = empty(p.out_shape, {DType::I64, t.device()});
    cuda::launch_argreduce_lastdim(code == cuda::kReduceMax, static_cast<int>(t.dtype()),
                                   src.data_ptr(), indices->data<int64_t>(), outer, inner,
                                   cuda_ops::stream_of(t));
  }
  cuda_ops::launched(t);
  return out;
}

Tensor sum_forward(const Tensor& t_in, const Dims& dims, bool keepdim) {
  profile::OpScope scope("sum");
  if (t_in.device().is_cuda()) return reduce_cuda(t_in, dims, keepdim, cuda::kReduceSum, "sum");
  check_cpu(t_in, "sum");
  DType rt = is_integral(t_in.dtype()) ? DType::I64 : t_in.dtype();
  DType ct = compute_type(rt);
  Reduction r = prepare(t_in.detach().to(ct), dims, keepdim, "sum");
  Tensor out = r.alloc(ct);
  cpu::visit_numeric(ct, "sum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, SumReducer<T>{out.data<T>()});
  });
  out = r.result(out);
  return out.dtype() == rt ? out : out.to(rt);
}

struct SumBackward : autograd::Node {
  Dims in_shape, keep_shape;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {g[0].reshape(keep_shape).expand(in_shape).contiguous()};
  }
  const char* name() const override { return "SumBackward"; }
};

// --- prod ---------------------------------------------------------------------

// d prod / d x_i = prod_{j != i} x_j, as (product of the elements before i) x
// (product of those after i): exact with zeros in the row, no division.
template <typename T>
void prod_backward_rows(const T* x, const T* g, T* gx, int64_t outer, int64_t inner) {
  int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(inner, 1));
  parallel_for(0, outer, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t o = lo; o < hi; ++o) {
      const T* row = x + o * inner;
      T* grow = gx + o * inner;
      T before(1);
      for (int64_t i = 0; i < inner; ++i) {
        grow[i] = before;
        before *= row[i];
      }
      T after(1);
      for (int64_t i = inner - 1; i >= 0; --i) {
        T others = grow[i] * after;
        if constexpr (kIsComplex<T>) others = std::conj(others);
        grow[i] = g[o] * others;
        after *= row[i];
      }
    }
  });
}

Tensor prod_backward(const Tensor& g, const Tensor& x_in, const ReducePlan& p) {
  profile::OpScope scope("prod_backward");
  Tensor x = x_in.permute(p.order).contiguous();
  Tensor gc = g.to(x.dtype()).contiguous();
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  if (x.device().is_cuda()) {
    cuda::launch_prod_backward_lastdim(static_cast<int>(x.dtype()), x.data_ptr(), gc.data_ptr(),
                                       gx.data_ptr(), p.outer, p.inner, cuda_ops::stream_of(x));
    cuda_ops::launched(x);
  } else {
    cpu::visit_inexact(x.dtype(), "prod_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      prod_backward_rows(x.data<T>(), gc.data<T>(), gx.data<T>(), p.outer, p.inner);
    });
  }
  Dims inverse = Dims::filled(p.order.size(), 0);
  for (int i = 0; i < p.order.size(); ++i) inverse[static_cast<int>(p.order[i])] = i;
  return gx.permute(inverse).contiguous();
}

struct ProdBackward : autograd::Node {
  autograd::SavedTensor x;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {prod_backward(g[0], x.unpack(name()), plan)};
  }
  const char* name() const override { return "ProdBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(x); }
};

// --- amax / amin, max / min along a dim -----------------------------------------

template <bool kMax>
Tensor extreme_forward(const Tensor& t, const Dims& dims, bool keepdim, const char* op,
                       Tensor* indices) {
  profile::OpScope scope(op);
  FK_CHECK(!is_complex(t.dtype()), op, "a real dtype (complex numbers are not ordered)",
           name(t.dtype()));
  if (t.device().is_cuda()) {
    return reduce_cuda(t, dims, keepdim, kMax ? cuda::kReduceMax : cuda::kReduceMin, op, indices);
  }
  check_cpu(t, op);
  DType ct = t.dtype() == DType::Bool ? DType::I32 : compute_type(t.dtype());
  Reduction r = prepare(t.detach().to(ct), dims, keepdim, op);
  check_nonempty(r, op, t);
  Tensor out = r.alloc(ct);
  if (indices) *indices = r.alloc(DType::I64);
  cpu::visit_real(ct, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    int64_t* idx = indices ? indices->data<int64_t>() : nullptr;
    const bool vec = cpu_isa() >= CpuIsa::Avx2;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, ExtremeReducer<T, kMax>{out.data<T>(), idx, vec});
  });
  out = r.result(out);
  if (indices) *indices = r.result(*indices);
  return out.dtype() == t.dtype() ? out : out.to(t.dtype());
}

// The gradient of amax/amin goes to every element equal to the result, split evenly.
struct AmaxBackward : autograd::Node {
  autograd::SavedTensor x, out;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    const Tensor& xv = x.unpack(name());
    Tensor mask = eq(xv, keep(out.unpack(name()), plan)).to(xv.dtype());
    Tensor count = sum(mask, plan.dims, true);
    return {mul(div(mask, count), keep(g[0], plan))};
  }
  const char* name() const override { return "AmaxBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

template <bool kMax>
Tensor amax_impl(const Tensor& t, const Dims& dims, bool keepdim, const char* op) {
  if (is_half(t.dtype())) return amax_impl<kMax>(t.to(DType::F32), dims, keepdim, op).to(t.dtype());
  Tensor out = extreme_forward<kMax>(t, dims, keepdim, op, nullptr);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<AmaxBackward>();
    node->x = t;
    node->out = out.detach();
    node->plan = plan_reduce(t, dims, keepdim, op);
    autograd::record(node, {t}, out);
  }
  return out;
}

// Scatters the output gradient to the positions the indices name.
struct MaxDimBackward : autograd::Node {
  autograd::SavedTensor indices;
  Dims in_shape, keep_shape;
  int dim = 0;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    profile::OpScope scope("max_backward");
    if (grads[0].device().is_cuda()) {  // position == index along dim, as a mask
      Tensor idx = indices.unpack(name()).reshape(keep_shape);
      Dims pos_shape = Dims::filled(in_shape.size(), 1);
      pos_shape[dim] = in_shape[dim];
      Tensor pos = arange(in_shape[dim], {DType::I64, grads[0].device()}).reshape(pos_shape);
      Tensor g = grads[0].reshape(keep_shape);
      return {where(eq(pos, idx), g, scalar_like(g, 0.0)).expand(in_shape).contiguous()};
    }
    Tensor g = grads[0].reshape(keep_shape).contiguous();
    Tensor idx = indices.unpack(name()).contiguous();
    Tensor gx = zeros(in_shape, {g.dtype(), g.device()});
    Split s = split_at(in_shape, dim);
    cpu::visit_float(g.dtype(), "max_backward", [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* gp = g.data<T>();
      const int64_t* ip = idx.data<int64_t>();
      T* out = gx.data<T>();
      for (int64_t a = 0; a < s.A; ++a) {
        for (int64_t c = 0; c < s.C; ++c) {
          out[(a * s.R + ip[a * s.C + c]) * s.C + c] = gp[a * s.C + c];
        }
      }
    });
    return {gx};
  }
  const char* name() const override { return "MaxDimBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(indices);
  }
};

template <bool kMax>
std::pair<Tensor, Tensor> max_dim_impl(const Tensor& t, int64_t dim, bool keepdim, const char* op) {
  if (is_half(t.dtype())) {
    auto [v, i] = max_dim_impl<kMax>(t.to(DType::F32), dim, keepdim, op);
    return {v.to(t.dtype()), i};
  }
  int d = wrap_dim(dim, t.dim(), op);
  Tensor indices;
  Tensor values = extreme_forward<kMax>(t, Dims{d}, keepdim, op, &indices);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<MaxDimBackward>();
    node->indices = indices.detach();
    node->in_shape = t.shape();
    node->keep_shape = plan_reduce(t, Dims{d}, true, op).keep_shape;
    node->dim = d;
    autograd::record(node, {t}, values);
  }
  return {values, indices};
}

template <bool kMax>
Tensor arg_impl(const Tensor& t, int64_t dim, bool keepdim, const char* op) {
  FK_CHECK(!is_complex(t.dtype()), op, "a real dtype (complex numbers are not ordered)",
           name(t.dtype()));
  Tensor x = is_half(t.dtype()) ? t.detach().to(DType::F32) : t.detach();
  Tensor indices;
  extreme_forward<kMax>(x, Dims{wrap_dim(dim, t.dim(), op)}, keepdim, op, &indices);
  return indices;
}

// --- norm ---------------------------------------------------------------------

NormKind norm_kind(double p) {
  if (std::isinf(p)) return NormKind::Inf;
  if (p == 1.0) return NormKind::One;
  if (p == 2.0) return NormKind::Two;
  return NormKind::General;
}

// CUDA: composed from the device's elementwise ops and deterministic
// reductions (|x| summed, squared and summed, or its max), accumulated in the
// input's precision (the CPU accumulates in f64).
Tensor norm_cuda(const Tensor& t, double p, const Dims& dims, bool keepdim) {
  const ReducePlan plan = plan_reduce(t, dims, keepdim, "norm");
  if (plan.inner == 0) return zeros(plan.out_shape, {real_type(t.dtype()), t.device()});
  Tensor m = abs(t.detach());  // real for complex inputs
  switch (norm_kind(p)) {
    case NormKind::One:
      return sum(m, dims, keepdim);
    case NormKind::Two:
      return sqrt(sum(square(m), dims, keepdim));
    case NormKind::Inf:
      return amax(m, dims, keepdim);
    case NormKind::General:
      break;
  }
  return pow(sum(pow(m, p), dims, keepdim), 1.0 / p);
}

Tensor norm_forward(const Tensor& t, double p, const Dims& dims, bool keepdim) {
  profile::OpScope scope("norm");
  if (t.device().is_cuda()) return norm_cuda(t, p, dims, keepdim);
  Reduction r = prepare(t, dims, keepdim, "norm");
  Tensor out = r.alloc(real_type(t.dtype()));
  cpu::visit_inexact(t.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename RealOf<T>::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, NormReducer<T>{out.data<R>(), norm_kind(p), p});
  });
  return r.result(out);
}

// x / |x| (0 at 0): the gradient direction of |x| for real and complex x.
template <typename T>
T unit(T v) {
  if constexpr (kIsComplex<T>) {
    auto m = std::abs(v);
    return m == 0 ? T(0) : v / m;
  } else {
    return static_cast<T>((T(0) < v) - (v < T(0)));
  }
}

// The CUDA form of norm_backward's elementwise step (below), from the
// device's elementwise ops: n is the norm and s the incoming gradient, both
// real with the reduced dims kept as size 1 (s already divided by the count of
// maxima for p = inf).
Tensor norm_backward_cuda(const Tensor& x, const Tensor& n, const Tensor& s, double p) {
  Tensor m = abs(x);
  Tensor zero = scalar_like(x, 0.0);
  Tensor u = is_complex(x.dtype()) ? where(eq(m, scalar_like(m, 0.0)), zero, div(x, m)) : sign(x);
  Tensor n_zero = eq(n, scalar_like(n, 0.0));
  switch (norm_kind(p)) {
    case NormKind::One:
      return mul(u, s);
    case NormKind::Two:
      return where(n_zero, zero, mul(x, div(s, n)));
    case NormKind::Inf:
      return where(eq(m, n), mul(u, s), zero);
    case NormKind::General:
      break;
  }
  Tensor v = mul(u, mul(s, pow(div(m, n), p - 1.0)));
  return where(n_zero, zero, where(eq(m, scalar_like(m, 0.0)), zero, v));
}

// d||x||_p / dx = sgn(x) (|x| / n)^(p-1); at x = 0 or n = 0 the subgradient 0
// is used. For p = inf, `s` is g / (number of elements attaining the max).
Tensor norm_backward(const Tensor& g_in, const Tensor& x, const Tensor& n_in, double p,
                     const ReducePlan& plan) {
  profile::OpScope scope("norm_backward");
  DType rt = real_type(x.dtype());
  Tensor n = keep(n_in, plan).to(rt);
  Tensor s = keep(g_in, plan).to(rt);
  NormKind kind = norm_kind(p);
  if (kind == NormKind::Inf) {
    Tensor count = sum(eq(abs(x), n).to(rt), plan.dims, true);
    s = div(s, count);
  }
  if (x.device().is_cuda()) return norm_backward_cuda(x, n, s, p);
  Tensor gx = empty(x.shape(), {x.dtype(), x.device()});
  cpu::visit_inexact(x.dtype(), "norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename RealOf<T>::type;
    auto run = [&](auto f) { cpu::map3<T, T, R, R>(gx, x, n, s, f); };
    switch (kind) {
      case NormKind::One:
        return run([](T v, R, R sv) { return T(sv) * unit(v); });
      case NormKind::Two:
        return run([](T v, R nv, R sv) { return nv == R(0) ? T(0) : v * T(sv / nv); });
      case NormKind::Inf:
        return run([](T v, R nv, R sv) { return std::abs(v) == nv ? T(sv) * unit(v) : T(0); });
      case NormKind::General: {
        const R e = static_cast<R>(p - 1.0);
        return run([e](T v, R nv, R sv) {
          R m = std::abs(v);
          return (nv == R(0) || m == R(0)) ? T(0) : T(sv * std::pow(m / nv, e)) * unit(v);
        });
      }
    }
  });
  return gx;
}

struct NormBackward : autograd::Node {
  autograd::SavedTensor x, out;
  double p = 2;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {norm_backward(g[0], x.unpack(name()), out.unpack(name()), p, plan)};
  }
  const char* name() const override { return "NormBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

// --- var ------------------------------------------------------------------------

Tensor var_forward(const Tensor& t, const Dims& dims, int64_t correction, bool keepdim) {
  profile::OpScope scope("var");
  if (t.device().is_cuda()) {
    // Two passes on the device: the mean, then the summed squared deviations.
    const ReducePlan plan = plan_reduce(t, dims, keepdim, "var");
    Tensor x = t.detach();
    Tensor dev = sub(x, mean(x, dims, true));
    Tensor sq = is_complex(dev.dtype()) ? square(abs(dev)) : square(dev);
    const double divisor = std::max(0.0, static_cast<double>(plan.inner - correction));
    return div(sum(sq, dims, keepdim), divisor);
  }
  Reduction r = prepare(t, dims, keepdim, "var");
  Tensor out = r.alloc(real_type(t.dtype()));
  cpu::visit_inexact(t.dtype(), "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using R = typename RealOf<T>::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C,
                 VarReducer<T>{out.data<R>(), static_cast<double>(correction)});
  });
  return r.result(out);
}

// d var / dx = 2 (x - mean) / (N - correction); the mean's own dependence on x
// cancels because the deviations sum to zero.
struct VarBackward : autograd::Node {
  autograd::SavedTensor x;
  ReducePlan plan;
  double divisor = 1;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    const Tensor& xv = x.unpack(name());
    Tensor dev = sub(xv, mean(xv, plan.dims, true));
    Tensor scale = mul(keep(g[0], plan).to(real_type(xv.dtype())), 2.0 / divisor);
    return {mul(dev, scale)};
  }
  const char* name() const override { return "VarBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(x); }
};

// --- logsumexp --------------------------------------------------------------------

Tensor logsumexp_forward(const Tensor& t, const Dims& dims, bool keepdim) {
  profile::OpScope scope("logsumexp");
  if (t.device().is_cuda()) {
    // m + log(sum(exp(x - m))) with m the max (0 where it is infinite, so that
    // rows of -inf give -inf and a +inf gives +inf, as on the CPU).
    const ReducePlan plan = plan_reduce(t, dims, keepdim, "logsumexp");
    if (plan.inner == 0) {
      return full(plan.out_shape, -std::numeric_limits<double>::infinity(),
                  {t.dtype(), t.device()});
    }
    Tensor x = t.detach();
    Tensor m = amax(x, dims, true);
    Tensor inf = scalar_like(m, std::numeric_limits<double>::infinity());
    m = where(eq(abs(m), inf), scalar_like(m, 0.0), m);
    Tensor out = add(log(sum(exp(sub(x, m)), dims, true)), m);
    return out.reshape(plan.out_shape);
  }
  Reduction r = prepare(t, dims, keepdim, "logsumexp");
  Tensor out = r.alloc(t.dtype());
  const bool vec = cpu_isa() >= CpuIsa::Avx2;
  cpu::visit_float(t.dtype(), "logsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_block(r.src.data<T>(), r.A, r.R, r.C, LogSumExpReducer<T>{out.data<T>(), vec});
  });
  return r.result(out);
}

// d lse / dx = exp(x - lse), the softmax.
struct LogSumExpBackward : autograd::Node {
  autograd::SavedTensor x, out;
  ReducePlan plan;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    Tensor w = exp(sub(x.unpack(name()), keep(out.unpack(name()), plan)));
    return {mul(w, keep(g[0], plan))};
  }
  const char* name() const override { return "LogSumExpBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override {
    fn(x);
    fn(out);
  }
};

// --- softmax / log_softmax ----------------------------------------------------------

// Calls f(offset, w) for blocks of up to kLaneBlock neighbouring lanes (a, c)
// of a contiguous [A, R, C] block: lane j of the block is the R elements at
// offset + j + r * C. Each lane is handled by one thread; rows of w elements
// are read contiguously, so a leading dim is processed without a transpose.
template <typename F>
void for_each_lane_block(const Split& s, const F& f) {
  const int64_t nc = (s.C + kLaneBlock - 1) / kLaneBlock;
  const int64_t tasks = s.A * nc;
  const int64_t per_task = std::max<int64_t>(1, s.R * std::min(s.C, kLaneBlock));
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / per_task);
  if (tasks >= 2 * grain && get_num_threads() > 1) profile::count_launch();
  parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t task = lo; task < hi; ++task) {
      const int64_t a = task / nc, c0 = (task % nc) * kLaneBlock;
      f(a * s.R * s.C + c0, std::min(s.C, c0 + kLaneBlock) - c0);
    }
  });
}

// y = exp(x - m) / sum exp(x - m) with m the lane's max (or x - m - log sum for
// log_softmax): exp never overflows.
// f32 on an AVX2 CPU takes the vector exp (<= 1 ulp, vec_math.h); the sums
// keep their order, so only the exp's last bit differs between the paths.
template <typename T, bool kLog>
void softmax_kernel(const T* x, T* y, const Split& s) {
  using Acc = typename SumAcc<T>::type;
  const int64_t C = s.C;
  const bool vec = cpu_isa() >= CpuIsa::Avx2;
  for_each_lane_block(s, [&](int64_t off, int64_t w) {
    if (C == 1) {
      // Over the last dim: one lane, a contiguous run. Straight loops over it
      // (the lane loops below would run one element per row); the sum over 8
      // lanes in a fixed order (cpu/lane_sums.h).
      const T* xr = x + off;
      T* yr = y + off;
      T m = -std::numeric_limits<T>::infinity();
      if (vec) {
        bool nan = false;  // a NaN makes the row NaN through its exp
        m = cpu::avx2::max_ignoring_nan_run(xr, s.R, &nan);
      } else {
        for (int64_t r = 0; r < s.R; ++r) m = m < xr[r] ? xr[r] : m;  // std::max
      }
      if (std::isinf(m)) m = T(0);
      const Acc total = exp_shifted_run<T, !kLog>(xr, yr, s.R, m, vec);
      const T k = kLog ? m + static_cast<T>(std::log(total)) : static_cast<T>(1.0 / total);
      for (int64_t r = 0; r < s.R; ++r) {
        if constexpr (kLog) {
          yr[r] = xr[r] - k;
        } else {
          yr[r] *= k;
        }
      }
      return;
    }
    std::array<T, kLaneBlock> m{};  // {}: GCC cannot see that lanes < w are all set
    std::array<Acc, kLaneBlock> total;
    for (int64_t j = 0; j < w; ++j) {
      m[j] = -std::numeric_limits<T>::infinity();
      total[j] = 0;
    }
    for (int64_t r = 0; r < s.R; ++r) {
      const T* xr = x + off + r * C;
      for (int64_t j = 0; j < w; ++j) m[j] = std::max(m[j], xr[j]);
    }
    for (int64_t j = 0; j < w; ++j) {
      if (std::isinf(m[j])) m[j] = T(0);  // all -inf (or an inf): avoid inf - inf
    }
    exp_shifted_lanes<T, !kLog>(x + off, y + off, s.R, C, w, m.data(), total.data(), vec);
    std::array<T, kLaneBlock> k;  // log_softmax: the shift m + log(total); softmax: 1 / total
    for (int64_t j = 0; j < w; ++j) {
      k[j] = kLog ? m[j] + static_cast<T>(std::log(total[j])) : static_cast<T>(1.0 / total[j]);
    }
    for (int64_t r = 0; r < s.R; ++r) {
      const T* xr = x + off + r * C;
      T* yr = y + off + r * C;
      for (int64_t j = 0; j < w; ++j) {
        if constexpr (kLog) {
          yr[j] = xr[j] - k[j];
        } else {
          yr[j] *= k[j];
        }
      }
    }
  });
}

// softmax: gx = y (g - sum(g y)); log_softmax: gx = g - exp(y) sum(g).
template <typename T, bool kLog>
void softmax_backward_kernel(const T* g, const T* y, T* gx, const Split& s) {
  using Acc = typename SumAcc<T>::type;
  const int64_t C = s.C;
  for_each_lane_block(s, [&](int64_t off, int64_t w) {
    std::array<Acc, kLaneBlock> total;
    for (int64_t j = 0; j < w; ++j) total[j] = 0;
    for (int64_t r = 0; r < s.R; ++r) {
      const T* gr = g + off + r * C;
      const T* yr = y + off + r * C;
      for (int64_t j = 0; j < w; ++j) {
        total[j] +=
            kLog ? static_cast<Acc>(gr[j]) : static_cast<Acc>(gr[j]) * static_cast<Acc>(yr[j]);
      }
    }
    std::array<T, kLaneBlock> tot;
    for (int64_t j = 0; j < w; ++j) tot[j] = static_cast<T>(total[j]);
    for (int64_t r = 0; r < s.R; ++r) {
      const T* gr = g + off + r * C;
      const T* yr = y + off + r * C;
      T* out = gx + off + r * C;
      for (int64_t j = 0; j < w; ++j) {
        out[j] = kLog ? gr[j] - std::exp(yr[j]) * tot[j] : yr[j] * (gr[j] - tot[j]);
      }
    }
  });
}

// CUDA: the softmax dim moved last (one row per block), then moved back.
Tensor softmax_cuda(const Tensor& t, const Tensor* grad, int d, bool log) {
  Tensor x = t.detach().transpose(d, -1).contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  int64_t inner = x.dim() ? x.shape()[x.dim() - 1] : 1, outer = inner ? x.numel() / inner : 0;
  if (grad) {
    Tensor g = grad->to(x.dtype()).transpose(d, -1).contiguous();
    cuda::launch_softmax_backward_lastdim(static_cast<int>(x.dtype()), g.data_ptr(), x.data_ptr(),
                                          y.data_ptr(), outer, inner, log, cuda_ops::stream_of(x));
  } else {
    cuda::launch_softmax_lastdim(static_cast<int>(x.dtype()), x.data_ptr(), y.data_ptr(), outer,
                                 inner, log, cuda_ops::stream_of(x));
  }
  cuda_ops::launched(x);
  return y.transpose(d, -1).contiguous();
}

Tensor softmax_forward(const Tensor& t, int d, bool log) {
  profile::OpScope scope(log ? "log_softmax" : "softmax");
  if (t.device().is_cuda()) return softmax_cuda(t, nullptr, d, log);
  Tensor x = t.detach().contiguous();
  Tensor y = empty(x.shape(), {x.dtype(), x.device()});
  Split s = split_at(x.shape(), d);
  cpu::visit_float(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (log) {
      softmax_kernel<T, true>(x.data<T>(), y.data<T>(), s);
    } else {
      softmax_kernel<T, false>(x.data<T>(), y.data<T>(), s);
    }
  });
  return y;
}

Tensor softmax_backward(const Tensor& g_in, const Tensor& y_in, int d, bool log) {
  profile::OpScope scope(log ? "log_softmax_backward" : "softmax_backward");
  if (y_in.device().is_cuda()) return softmax_cuda(y_in, &g_in, d, log);
  Tensor y = y_in.contiguous();
  Tensor g = g_in.to(y.dtype()).contiguous();
  Tensor gx = empty(y.shape(), {y.dtype(), y.device()});
  Split s = split_at(y.shape(), d);
  cpu::visit_float(y.dtype(), "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (log) {
      softmax_backward_kernel<T, true>(g.data<T>(), y.data<T>(), gx.data<T>(), s);
    } else {
      softmax_backward_kernel<T, false>(g.data<T>(), y.data<T>(), gx.data<T>(), s);
    }
  });
  return gx;
}

struct SoftmaxBackward : autograd::Node {
  autograd::SavedTensor out;
  int dim = 0;
  bool log = false;
  std::vector<Tensor> apply(std::vector<Tensor>&& g) override {
    return {softmax_backward(g[0], out.unpack(name()), dim, log)};
  }
  const char* name() const override { return log ? "LogSoftmaxBackward" : "SoftmaxBackward"; }
  void for_each_saved(const std::function<void(autograd::SavedTensor&)>& fn) override { fn(out); }
};

Tensor softmax_impl(const Tensor& t, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  int d = wrap_dim(dim, t.dim(), op);
  FK_CHECK(!is_complex(t.dtype()), op, "a real dtype", name(t.dtype()));
  DType ct = inexact_type(t.dtype());
  if (ct != t.dtype()) {
    Tensor r = softmax_impl(t.to(ct), dim, log);
    return is_half(t.dtype()) ? r.to(t.dtype()) : r;
  }
  Tensor out = softmax_forward(t, d, log);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<SoftmaxBackward>();
    node->out = out.detach();
    node->dim = d;
    node->log = log;
    autograd::record(node, {t}, out);
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& t, const Dims& dims, bool keepdim) {
  Tensor out = sum_forward(t, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<SumBackward>();
    node->in_shape = t.shape();
    node->keep_shape = plan_reduce(t, dims, keepdim, "sum").keep_shape;
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor mean(const Tensor& t, const Dims& dims, bool keepdim) {
  if (is_half(t.dtype())) return mean(t.to(DType::F32), dims, keepdim).to(t.dtype());
  ReducePlan p = plan_reduce(t, dims, keepdim, "mean");
  Tensor s = sum(is_integral(t.dtype()) ? t.to(DType::F32) : t, dims, keepdim);
  return div(s, static_cast<double>(std::max<int64_t>(p.inner, 1)));
}

Tensor prod(const Tensor& t, const Dims& dims, bool keepdim) {
  if (is_half(t.dtype())) return prod(t.to(DType::F32), dims, keepdim).to(t.dtype());
  profile::OpScope scope("prod");
  Tensor out;
  if (t.device().is_cuda()) {
    out = reduce_cuda(t, dims, keepdim, cuda::kReduceProd, "prod");
  } else {
    check_cpu(t, "prod");
    DType ct = is_integral(t.dtype()) ? DType::I64 : t.dtype();
    Reduction r = prepare(t.detach().to(ct), dims, keepdim, "prod");
    out = r.alloc(ct);
    cpu::visit_numeric(ct, "prod", [&](auto tag) {
      using T = typename decltype(tag)::type;
      reduce_block(r.src.data<T>(), r.A, r.R, r.C, ProdReducer<T>{out.data<T>()});
    });
    out = r.result(out);
  }
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<ProdBackward>();
    node->x = t;
    node->plan = plan_reduce(t, dims, keepdim, "prod");
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor amax(const Tensor& t, const Dims& dims, bool keepdim) {
  return amax_impl<true>(t, dims, keepdim, "amax");
}
Tensor amin(const Tensor& t, const Dims& dims, bool keepdim) {
  return amax_impl<false>(t, dims, keepdim, "amin");
}

std::pair<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  return max_dim_impl<true>(t, dim, keepdim, "max");
}
std::pair<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  return max_dim_impl<false>(t, dim, keepdim, "min");
}

Tensor argmax(const Tensor& t, int64_t dim, bool keepdim) {
  return arg_impl<true>(t, dim, keepdim, "argmax");
}
Tensor argmin(const Tensor& t, int64_t dim, bool keepdim) {
  return arg_impl<false>(t, dim, keepdim, "argmin");
}

Tensor norm(const Tensor& t, double p, const Dims& dims, bool keepdim) {
  FK_CHECK(p > 0, "norm", "p > 0 or inf", std::to_string(p));
  DType ct = inexact_type(t.dtype());
  if (ct != t.dtype()) {
    Tensor r = norm(t.to(ct), p, dims, keepdim);
    return is_half(t.dtype()) ? r.to(t.dtype()) : r;
  }
  Tensor out = norm_forward(t, p, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<NormBackward>();
    node->x = t;
    node->out = out.detach();
    node->p = p;
    node->plan = plan_reduce(t, dims, keepdim, "norm");
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor var(const Tensor& t, const Dims& dims, int64_t correction, bool keepdim) {
  DType ct = inexact_type(t.dtype());
  if (ct != t.dtype()) {
    Tensor r = var(t.to(ct), dims, correction, keepdim);
    return is_half(t.dtype()) ? r.to(t.dtype()) : r;
  }
  Tensor out = var_forward(t, dims, correction, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<VarBackward>();
    node->x = t;
    node->plan = plan_reduce(t, dims, keepdim, "var");
    node->divisor = std::max<double>(0.0, static_cast<double>(node->plan.inner - correction));
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor std(const Tensor& t, const Dims& dims, int64_t correction, bool keepdim) {
  if (is_half(t.dtype())) return fk::std(t.to(DType::F32), dims, correction, keepdim).to(t.dtype());
  return sqrt(var(t, dims, correction, keepdim));
}

Tensor logsumexp(const Tensor& t, const Dims& dims, bool keepdim) {
  FK_CHECK(!is_complex(t.dtype()), "logsumexp", "a real dtype", name(t.dtype()));
  DType ct = inexact_type(t.dtype());
  if (ct != t.dtype()) {
    Tensor r = logsumexp(t.to(ct), dims, keepdim);
    return is_half(t.dtype()) ? r.to(t.dtype()) : r;
  }
  Tensor out = logsumexp_forward(t, dims, keepdim);
  if (autograd::needs_grad(t)) {
    auto node = std::make_shared<LogSumExpBackward>();
    node->x = t;
    node->out = out.detach();
    node->plan = plan_reduce(t, dims, keepdim, "logsumexp");
    autograd::record(node, {t}, out);
  }
  return out;
}

Tensor softmax(const Tensor& t, int64_t dim) {
  return softmax_impl(t, dim, false);
}
Tensor log_softmax(const Tensor& t, int64_t dim) {
  return softmax_impl(t, dim, true);
}

}  // namespace fk
