// The CPU kernel of the FFTs: FFTW guru plans over any strides, cached by
// geometry (see fk/ops/fft.h for the contract).
#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/fft.h"
#include "fk/ops/fft/spec.h"
#include "fk/profile.h"

namespace fk {
namespace fft_detail {
namespace {

Knob kPlanner("FK_FFTW_PLANNER", KnobChoices{{"estimate", "measure"}}, "estimate",
              "FFT (CPU): FFTW planner effort for new plans: estimate (instant) or measure "
              "(times candidate algorithms on scratch arrays: slow first call per shape)",
              KnobRead::Latched);

// --- FFTW, both precisions ----------------------------------------------------

// Up to kMaxDims FFTW dims, without heap allocation (this is on every call's path).
struct IoDims {
  std::array<fftw_iodim64, kMaxDims> v;
  int count = 0;
  void push_back(const fftw_iodim64& d) { v[count++] = d; }
  void clear() { count = 0; }
  int size() const { return count; }
  const fftw_iodim64* data() const { return v.data(); }
  const fftw_iodim64* begin() const { return v.data(); }
  const fftw_iodim64* end() const { return v.data() + count; }
};

template <typename R>
struct Fftw;

template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  static Plan dft(const IoDims& d, const IoDims& h, void* in, void* out, int sign, unsigned f) {
    return fftw_plan_guru64_dft(static_cast<int>(d.size()), d.data(), static_cast<int>(h.size()),
                                h.data(), static_cast<Complex*>(in), static_cast<Complex*>(out),
                                sign, f);
  }
  static Plan r2c(const IoDims& d, const IoDims& h, void* in, void* out, unsigned f) {
    return fftw_plan_guru64_dft_r2c(static_cast<int>(d.size()), d.data(),
                                    static_cast<int>(h.size()), h.data(), static_cast<double*>(in),
                                    static_cast<Complex*>(out), f);
  }
  static Plan c2r(const IoDims& d, const IoDims& h, void* in, void* out, unsigned f) {
    return fftw_plan_guru64_dft_c2r(static_cast<int>(d.size()), d.data(),
                                    static_cast<int>(h.size()), h.data(), static_cast<Complex*>(in),
                                    static_cast<double*>(out), f);
  }
  static void execute(Kind k, void* p, void* in, void* out) {
    auto plan = static_cast<Plan>(p);
    switch (k) {
      case Kind::R2R:  // refused by execute below: dct runs as r2c / c2r (dct_along)
        return;
      case Kind::C2C:
        return fftw_execute_dft(plan, static_cast<Complex*>(in), static_cast<Complex*>(out));
      case Kind::R2C:
        return fftw_execute_dft_r2c(plan, static_cast<double*>(in), static_cast<Complex*>(out));
      case Kind::C2R:
        return fftw_execute_dft_c2r(plan, static_cast<Complex*>(in), static_cast<double*>(out));
    }
  }
  static void destroy(void* p) { fftw_destroy_plan(static_cast<Plan>(p)); }
  static int alignment_of(void* p) { return fftw_alignment_of(static_cast<double*>(p)); }
};

template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  static Plan dft(const IoDims& d, const IoDims& h, void* in, void* out, int sign, unsigned f) {
    return fftwf_plan_guru64_dft(static_cast<int>(d.size()), d.data(), static_cast<int>(h.size()),
                                 h.data(), static_cast<Complex*>(in), static_cast<Complex*>(out),
                                 sign, f);
  }
  static Plan r2c(const IoDims& d, const IoDims& h, void* in, void* out, unsigned f) {
    return fftwf_plan_guru64_dft_r2c(static_cast<int>(d.size()), d.data(),
                                     static_cast<int>(h.size()), h.data(), static_cast<float*>(in),
                                     static_cast<Complex*>(out), f);
  }
  static Plan c2r(const IoDims& d, const IoDims& h, void* in, void* out, unsigned f) {
    return fftwf_plan_guru64_dft_c2r(static_cast<int>(d.size()), d.data(),
                                     static_cast<int>(h.size()), h.data(),
                                     static_cast<Complex*>(in), static_cast<float*>(out), f);
  }
  static void execute(Kind k, void* p, void* in, void* out) {
    auto plan = static_cast<Plan>(p);
    switch (k) {
      case Kind::R2R:  // refused by execute below: dct runs as r2c / c2r (dct_along)
        return;
      case Kind::C2C:
        return fftwf_execute_dft(plan, static_cast<Complex*>(in), static_cast<Complex*>(out));
      case Kind::R2C:
        return fftwf_execute_dft_r2c(plan, static_cast<float*>(in), static_cast<Complex*>(out));
      case Kind::C2R:
        return fftwf_execute_dft_c2r(plan, static_cast<Complex*>(in), static_cast<float*>(out));
    }
  }
  static void destroy(void* p) { fftwf_destroy_plan(static_cast<Plan>(p)); }
  static int alignment_of(void* p) { return fftwf_alignment_of(static_cast<float*>(p)); }
};

// --- the plan cache -----------------------------------------------------------

// A plan is valid for any arrays with the geometry, dtype, kind, direction,
// placement and FFTW alignment class it was made for (FFTW's new-array execute
// contract), so that is the key.
constexpr int kKeyHeader = 8;
using PlanKey =
    std::array<int64_t, kKeyHeader + 3 * kMaxDims>;  // batch + transform dims <= kMaxDims

struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const {
    uint64_t h = 14695981039346656037ull;  // FNV-1a over the words
    for (int64_t v : k) {
      h ^= static_cast<uint64_t>(v);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

using PlanPtr = std::shared_ptr<void>;

// FFTW's planner and plan destruction are not thread-safe; this mutex guards
// both (and the map). Execution with a held plan needs no lock. The registry
// is never destroyed, so plans outliving static destruction stay valid.
struct PlanRegistry {
  std::mutex mu;
  std::unordered_map<PlanKey, PlanPtr, PlanKeyHash> plans;
};
PlanRegistry& registry() {
  static auto* r = new PlanRegistry();
  return *r;
}

// Plans are small, but distinct geometries accumulate; past this many the
// cache starts over (plans in use elsewhere live on through their shared_ptr).
constexpr size_t kMaxCachedPlans = 1024;

// Read when a plan is made (the knob itself latches the value).
bool measure_planner() {
  const std::string v = kPlanner.as_string();
  return v == "measure";
}

// Elements spanned by a strided array (input side when `in`, else output side).
int64_t span_of(const IoDims& d, const IoDims& h, bool in) {
  int64_t span = 1;
  for (const auto* v : {&d, &h}) {
    for (const fftw_iodim64& io : *v) span += (io.n - 1) * std::abs(in ? io.is : io.os);
  }
  return span;
}

// A 64-byte aligned block, shifted so that its FFTW alignment class equals `like`'s.
struct Scratch {
  Scratch(int64_t bytes, const void* like) {
    size_t total = (static_cast<size_t>(bytes) + 64 + 63) / 64 * 64;
    base = std::aligned_alloc(64, total);
    FK_CHECK(base != nullptr, "fft (planner scratch)", "an allocation to succeed",
             fk::to_text(total) + " bytes");
    ptr = static_cast<char*>(base) + reinterpret_cast<uintptr_t>(like) % 64;
  }
  ~Scratch() { std::free(base); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* base = nullptr;
  void* ptr = nullptr;
};

template <typename R>
PlanPtr make_plan(Kind kind, int sign, const IoDims& d, const IoDims& h, void* in, void* out) {
  const bool in_place = in == out;
  const bool measure = measure_planner();
  unsigned flags = measure ? FFTW_MEASURE : FFTW_ESTIMATE;
  if (kind == Kind::C2R) {
    flags |= FFTW_DESTROY_INPUT;
  } else if (!in_place) {
    flags |= FFTW_PRESERVE_INPUT;  // `in` may be the caller's tensor
  }
  // Measuring runs transforms on the arrays: give it scratch of the same layout
  // and alignment. Estimating never touches them.
  std::unique_ptr<Scratch> sin, sout;
  if (measure) {
    const int64_t in_item = kind == Kind::R2C ? sizeof(R) : 2 * sizeof(R);
    const int64_t out_item = kind == Kind::C2R ? sizeof(R) : 2 * sizeof(R);
    sin = std::make_unique<Scratch>(span_of(d, h, true) * in_item, in);
    in = sin->ptr;
    if (in_place) {
      out = in;
    } else {
      sout = std::make_unique<Scratch>(span_of(d, h, false) * out_item, out);
      out = sout->ptr;
    }
  }
  typename Fftw<R>::Plan p = nullptr;
  switch (kind) {
    case Kind::C2C:
      p = Fftw<R>::dft(d, h, in, out, sign, flags);
      break;
    case Kind::R2C:
      p = Fftw<R>::r2c(d, h, in, out, flags);
      break;
    case Kind::C2R:
      p = Fftw<R>::c2r(d, h, in, out, flags);
      break;
    case Kind::R2R:  // never planned: dct runs as r2c / c2r (dct_along)
      break;
  }
  if (p == nullptr) return nullptr;
  return PlanPtr(static_cast<void*>(p), [](void* q) {
    std::lock_guard<std::mutex> lock(registry().mu);
    Fftw<R>::destroy(q);
  });
}

// Runs one FFTW transform of `kind` over the strided arrays in -> out.
template <typename R>
void execute(Kind kind, int sign, const IoDims& d, const IoDims& h, void* in, void* out) {
  FK_CHECK(kind != Kind::R2R, "fft", "a complex or half-spectrum transform to plan",
           "a real-to-real one (dct runs as r2c / c2r)");
  PlanKey key{};
  key[0] = static_cast<int64_t>(kind);
  key[1] = sign;
  key[2] = in == out;
  key[3] = Fftw<R>::alignment_of(in);
  key[4] = Fftw<R>::alignment_of(out);
  key[5] = static_cast<int64_t>(d.size());
  key[6] = static_cast<int64_t>(h.size());
  key[7] = sizeof(R);
  int k = kKeyHeader;
  for (const auto* v : {&d, &h}) {
    for (const fftw_iodim64& io : *v) {
      key[k++] = io.n;
      key[k++] = io.is;
      key[k++] = io.os;
    }
  }
  PlanPtr plan;
  std::unordered_map<PlanKey, PlanPtr, PlanKeyHash> evicted;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    auto& plans = registry().plans;
    auto it = plans.find(key);
    if (it != plans.end()) {
      plan = it->second;
    } else {
      plan = make_plan<R>(kind, sign, d, h, in, out);
      FK_CHECK(plan != nullptr, "fft", "a geometry FFTW can plan",
               fmt::format("rank {} with {} batch dims", d.size(), h.size()));
      if (plans.size() >= kMaxCachedPlans) std::swap(evicted, plans);
      plans.emplace(key, plan);
    }
  }
  evicted.clear();  // outside the lock: destroying a plan takes it
  profile::count_launch();
  Fftw<R>::execute(kind, plan.get(), in, out);
}

// The FFTW layout of a transform from `in` to `out` (same rank): `tdims` are
// transformed (their logical lengths `n`), every other dim longer than 1 is a
// batch dim. Strides are in elements of each side's own type.
void layout(const Tensor& in, const Tensor& out, const Dims& tdims, const Dims& n, IoDims& d,
            IoDims& h) {
  d.clear();
  h.clear();
  for (int i = 0; i < tdims.size(); ++i) {
    d.push_back({n[i], in.stride(tdims[i]), out.stride(tdims[i])});
  }
  for (int a = 0; a < out.dim(); ++a) {
    if (std::find(tdims.begin(), tdims.end(), a) != tdims.end() || out.size(a) == 1) continue;
    h.push_back({out.size(a), in.stride(a), out.stride(a)});
  }
}

// --- small kernels ----------------------------------------------------------

// t *= scale, and the bins along `dim` that stand for two conjugate
// frequencies of a length-n real signal (0 < k < n/2) also *= pair_factor.
// t is contiguous complex; the loops run over flat (re, im) runs so they vectorise.
template <typename R>
void scale_bins(Tensor& t, int dim, int64_t n, double scale, double pair_factor) {
  if (scale == 1.0 && pair_factor == 1.0) return;
  R* p = static_cast<R*>(t.data_ptr());
  const int64_t m = t.size(dim);
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < dim; ++a) outer *= t.size(a);
  for (int a = dim + 1; a < t.dim(); ++a) inner *= t.size(a);
  const int64_t pair_end = std::min(m, (n + 1) / 2);  // pairs: bins [1, pair_end)
  const R s = static_cast<R>(scale), sp = static_cast<R>(scale * pair_factor);
  auto mul = [](R* q, int64_t count, R f) {
    for (int64_t i = 0; i < count; ++i) q[i] *= f;
  };
  for (int64_t o = 0; o < outer; ++o) {
    R* row = p + 2 * o * m * inner;
    mul(row, 2 * inner, s);
    mul(row + 2 * inner, 2 * inner * (pair_end - 1), sp);
    mul(row + 2 * inner * pair_end, 2 * inner * (m - pair_end), s);
  }
}

// FFTW's REDFT10 / REDFT01 along one dim of a contiguous real tensor, by
// Makhoul's reordering (IEEE TASSP 28(1), 1980): a DCT of length n is one real
// FFT of length n plus a pass each side, where FFTW's own REDFT kinds run 3-4x
// slower than its r2c (fk_bench --benchmark_filter=Dct2). With x viewed as
// (outer, n, inner), v the entries along the dim reordered (the even ones in
// order, then the odd ones reversed), V = rfft(v) and w_k = exp(-i pi k / 2n):
//   II   y_k = 2 Re(w_k V_k), y_{n-k} = 2 Re(w_{n-k} conj(V_k)) (k <= n/2);
//   III  V_j = conj(w_j) (x_j - i x_{n-j}) (x_n = 0, j <= n/2) is the half
//        spectrum of a real v (V_{n-j} = conj(V_j)); v = irfft(V) unscaled,
//        and y is v put back in the order II took it from.
// v and V are laid out (outer, inner, n), so that FFTW transforms contiguous
// rows (its estimated plan for a strided batch ran 9x slower); the passes
// either side do the transposition, kInnerBlock columns at a time.
constexpr int64_t kInnerBlock = 16;

template <typename R>
Tensor dct_along(const Tensor& x, int dim, bool second_kind) {
  const int64_t n = x.size(dim), half = n / 2 + 1;
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < dim; ++a) outer *= x.size(a);
  for (int a = dim + 1; a < x.dim(); ++a) inner *= x.size(a);
  const DType real_dt = dtype_of<R>();
  Tensor rows = empty({outer * inner, n}, {real_dt});
  Tensor spectrum = empty({outer * inner, half}, {complex_type(real_dt)});
  Tensor out = empty(x.shape(), {real_dt});
  IoDims d, h;
  d.push_back({n, 1, 1});
  if (outer * inner > 1) h.push_back({outer * inner, n, half});  // r2c; c2r swaps is and os
  // conj(w_k) = cos + i sin, as two real arrays: a std::complex temporary in
  // the passes compiled to a store-forwarding stall per entry (3x the time).
  std::vector<R> cos_k(static_cast<size_t>(half)), sin_k(static_cast<size_t>(half));
  for (int64_t k = 0; k < half; ++k) {
    const double t = std::numbers::pi * static_cast<double>(k) / (2.0 * static_cast<double>(n));
    cos_k[static_cast<size_t>(k)] = static_cast<R>(std::cos(t));
    sin_k[static_cast<size_t>(k)] = static_cast<R>(std::sin(t));
  }
  const R* xp = x.data<R>();
  R* yp = out.data<R>();
  R* vp = rows.data<R>();
  R* sp = static_cast<R*>(spectrum.data_ptr());  // (re, im) pairs
  const R* cp = cos_k.data();
  const R* snp = sin_k.data();
  // Visits f(o, r, i) for r in [r0, r1) and every column i: r innermost when
  // inner is 1 (then r runs along the contiguous axis of both sides), else i
  // innermost over blocks of columns, so that x and y are read and written in
  // runs while v and V (rows of n) are walked kInnerBlock rows at a time.
  auto sweep = [&](int64_t r0, int64_t r1, auto&& f) {
    for (int64_t o = 0; o < outer; ++o) {
      if (inner == 1) {
        for (int64_t r = r0; r < r1; ++r) f(o, r, int64_t{0});
        continue;
      }
      for (int64_t i0 = 0; i0 < inner; i0 += kInnerBlock) {
        const int64_t i1 = std::min(inner, i0 + kInnerBlock);
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t i = i0; i < i1; ++i) f(o, r, i);
        }
      }
    }
  };
  auto at_x = [&](int64_t o, int64_t j, int64_t i) { return (o * n + j) * inner + i; };
  auto at_v = [&](int64_t o, int64_t i, int64_t j) { return (o * inner + i) * n + j; };
  auto at_s = [&](int64_t o, int64_t i, int64_t k) { return 2 * ((o * inner + i) * half + k); };
  const int64_t n_even = (n + 1) / 2;  // v's first n_even entries are x's even ones
  if (second_kind) {
    sweep(0, n_even,
          [&](int64_t o, int64_t m, int64_t i) { vp[at_v(o, i, m)] = xp[at_x(o, 2 * m, i)]; });
    sweep(0, n / 2, [&](int64_t o, int64_t m, int64_t i) {
      vp[at_v(o, i, n - 1 - m)] = xp[at_x(o, 2 * m + 1, i)];
    });
    execute<R>(Kind::R2C, FFTW_FORWARD, d, h, vp, sp);
    sweep(0, half, [&](int64_t o, int64_t k, int64_t i) {
      const R* v = sp + at_s(o, i, k);
      yp[at_x(o, k, i)] = 2 * (cp[k] * v[0] + snp[k] * v[1]);
    });
    // y_{n-k} for 0 < k < n/2, with w_{n-k} = -i conj(w_k).
    sweep(1, n_even, [&](int64_t o, int64_t k, int64_t i) {
      const R* v = sp + at_s(o, i, k);
      yp[at_x(o, n - k, i)] = 2 * (snp[k] * v[0] - cp[k] * v[1]);
    });
    return out;
  }
  sweep(0, half, [&](int64_t o, int64_t j, int64_t i) {
    const R a = xp[at_x(o, j, i)], b = j == 0 ? R(0) : xp[at_x(o, n - j, i)];
    R* v = sp + at_s(o, i, j);  // conj(w_j) (a - i b)
    v[0] = cp[j] * a + snp[j] * b;
    v[1] = snp[j] * a - cp[j] * b;
  });
  if (h.size() > 0) std::swap(h.v[0].is, h.v[0].os);
  execute<R>(Kind::C2R, FFTW_BACKWARD, d, h, sp, vp);  // destroys the scratch spectrum
  sweep(0, n_even,
        [&](int64_t o, int64_t m, int64_t i) { yp[at_x(o, 2 * m, i)] = vp[at_v(o, i, m)]; });
  sweep(0, n / 2, [&](int64_t o, int64_t m, int64_t i) {
    yp[at_x(o, 2 * m + 1, i)] = vp[at_v(o, i, n - 1 - m)];
  });
  return out;
}

}  // namespace

template <typename R>
Tensor run_fftw(const Spec& spec, Tensor x, bool owned) {
  const DType real_dt = dtype_of<R>();
  const DType complex_dt = complex_type(real_dt);
  const int last = static_cast<int>(spec.dims.back());
  const int64_t n_last = spec.n.back();
  Dims out_shape = x.shape();
  for (int i = 0; i < spec.dims.size(); ++i) out_shape[static_cast<int>(spec.dims[i])] = spec.n[i];
  IoDims d, h;

  if (spec.kind == Kind::R2R) {
    // Unnormalised, like FFTW's (fk::dct has no norm argument); one dim at a time.
    if (x.numel() == 0) return empty(out_shape, {real_dt});
    Tensor out = x.contiguous();
    for (int i = 0; i < spec.dims.size(); ++i) {
      out = dct_along<R>(out, static_cast<int>(spec.dims[i]), spec.r2r == FFTW_REDFT10);
    }
    return out;
  }

  if (spec.kind != Kind::C2R) {
    if (spec.kind == Kind::R2C) out_shape[last] = n_last / 2 + 1;
    Tensor out = empty(out_shape, {complex_dt});
    if (out.numel() == 0) return out;
    layout(x, out, spec.dims, spec.n, d, h);
    execute<R>(spec.kind, spec.sign, d, h, x.data_ptr(), out.data_ptr());
    scale_bins<R>(out, last, n_last, spec.scale, spec.kind == Kind::R2C ? spec.pair_factor : 1.0);
    return out;
  }

  // C2R. FFTW's multi-dim c2r does the complex inverse along the leading dims
  // first and then the real inverse along the last, which is numpy's
  // definition for any (also non-Hermitian) spectrum; the tests pin that down.
  // It destroys its input, so it runs on a scratch spectrum, into which the
  // scaling is folded (the transform is linear).
  Tensor out = empty(out_shape, {real_dt});
  if (out.numel() == 0) return out;
  Tensor spectrum;
  if (owned && x.is_contiguous()) {
    spectrum = x;
    scale_bins<R>(spectrum, last, n_last, spec.scale, spec.pair_factor);
  } else {
    using C = std::complex<R>;
    spectrum = empty(x.shape(), {complex_dt});
    const R s = static_cast<R>(spec.scale);
    cpu::map1<C, C>(spectrum, x, [s](C v) { return v * s; });
    scale_bins<R>(spectrum, last, n_last, 1.0, spec.pair_factor);
  }
  layout(spectrum, out, spec.dims, spec.n, d, h);
  execute<R>(Kind::C2R, FFTW_BACKWARD, d, h, spectrum.data_ptr(), out.data_ptr());
  return out;
}

template Tensor run_fftw<float>(const Spec& spec, Tensor x, bool owned);
template Tensor run_fftw<double>(const Spec& spec, Tensor x, bool owned);

}  // namespace fft_detail

using fft_detail::PlanKey;
using fft_detail::PlanKeyHash;
using fft_detail::PlanPtr;
using fft_detail::registry;

const char* fft_backend() {
  return fftw_version;
}

int64_t fft_plan_cache_size() {
  std::lock_guard<std::mutex> lock(registry().mu);
  return static_cast<int64_t>(registry().plans.size());
}

void fft_clear_plan_cache() {
  std::unordered_map<PlanKey, PlanPtr, PlanKeyHash> old;
  {
    std::lock_guard<std::mutex> lock(registry().mu);
    std::swap(old, registry().plans);
  }
}

}  // namespace fk
