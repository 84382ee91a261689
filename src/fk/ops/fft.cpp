#include "fk/ops/fft.h"

#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "fk/autograd.h"
#include "fk/cuda/fft.h"
#include "fk/cuda/kernels.h"
#include "fk/factory.h"
#include "fk/knobs.h"
#include "fk/ops/binary.h"
#include "fk/ops/copy.h"
#include "fk/ops/cpu/loops.h"
#include "fk/ops/cuda_dispatch.h"
#include "fk/profile.h"

namespace fk {
namespace {

Knob kPlanner("FK_FFTW_PLANNER", KnobType::String, "estimate",
              "FFT (CPU): FFTW planner effort for new plans: estimate (instant) or measure "
              "(times candidate algorithms on scratch arrays: slow first call per shape)",
              KnobRead::Latched);

// --- transform description --------------------------------------------------

// C2C: complex -> complex; R2C: real -> half spectrum; C2R: half spectrum -> real.
enum class Kind : uint8_t { C2C, R2C, C2R };

// What one call computes: the unnormalised transform along `dims` (the last is
// the halved one for R2C/C2R) of signals of logical lengths `n`, times `scale`.
// `pair_factor` multiplies the bins (along the last dim) that stand for two
// conjugate frequencies, 0 < k and 2k != n: for C2R on the input spectrum, for
// R2C on the output. The adjoints of the real transforms need it (0.5 / 2).
struct Spec {
  Kind kind = Kind::C2C;
  Dims dims;  // wrapped, distinct
  Dims n;
  int sign = FFTW_FORWARD;  // C2C only; R2C is always forward, C2R always backward
  double scale = 1.0;
  double pair_factor = 1.0;
};

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
  FK_CHECK(v == "estimate" || v == "measure", "FK_FFTW_PLANNER", "estimate or measure", v);
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
             std::to_string(total) + " bytes");
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

// x with its `dims` resized to `sizes`: truncation is a view, padding a
// zero-filled copy (then *owned = true: the caller may overwrite it).
Tensor resize_dims(const Tensor& x, const Dims& dims, const Dims& sizes, bool* owned) {
  Tensor v = x;
  Dims target = x.shape();
  bool pad = false;
  for (int i = 0; i < dims.size(); ++i) {
    if (x.size(dims[i]) > sizes[i]) v = v.narrow(dims[i], 0, sizes[i]);
    pad = pad || x.size(dims[i]) < sizes[i];
    target[dims[i]] = sizes[i];
  }
  if (!pad) return v;
  Tensor z = zeros(target, {x.dtype(), x.device()});
  Tensor region = z;
  for (int64_t dim : dims) region = region.narrow(dim, 0, v.size(dim));
  copy_(region, v);
  if (owned != nullptr) *owned = true;
  return z;
}

// --- the pure forward ---------------------------------------------------------

// A part of `spec`: the transform along dims [lo, hi) of it, unscaled, with
// `sign` (for a C2C part).
Spec sub_spec(const Spec& spec, Kind kind, int lo, int hi, int sign) {
  Spec s;
  s.kind = kind;
  s.sign = sign;
  for (int i = lo; i < hi; ++i) {
    s.dims.push_back(spec.dims[i]);
    s.n.push_back(spec.n[i]);
  }
  return s;
}

// CUDA: the transformed dims are moved last (in spec order, so the halved dim
// is innermost) and made contiguous; one cuFFT plan from the plan cache in
// fk/cuda/fft.h then covers every batch (cuFFT's packed layout, rank <= 3).
// The scale and the pair-bin factor are one multiply by a per-bin weight
// along the last dim (before a C2R, which also gives cuFFT the scratch copy
// it overwrites; after a C2C or R2C). The result is permuted back and made
// contiguous, like the CPU's.
// A multi-dim C2R runs as FFTW defines it (and the CPU tests pin down): the
// complex inverse along the leading dims, then a 1-D C2R along the last whose
// DC and Nyquist bins have their imaginary parts dropped, so any spectrum,
// Hermitian or not, gives the CPU's result whatever cuFFT does with such
// inputs. Transforms of more than 3 dims are split the same way (separable).
template <typename R>
Tensor run_cuda(const Spec& spec, const Tensor& x) {
  const int rank = spec.dims.size();
  if (spec.kind == Kind::C2R && rank > 1) {
    Tensor lead = run_cuda<R>(sub_spec(spec, Kind::C2C, 0, rank - 1, FFTW_BACKWARD), x);
    Spec tail = sub_spec(spec, Kind::C2R, rank - 1, rank, FFTW_BACKWARD);
    tail.scale = spec.scale;
    tail.pair_factor = spec.pair_factor;
    return run_cuda<R>(tail, lead);
  }
  if (spec.kind == Kind::R2C && rank > 3) {
    Spec tail = sub_spec(spec, Kind::R2C, rank - 1, rank, FFTW_FORWARD);
    tail.scale = spec.scale;
    tail.pair_factor = spec.pair_factor;
    return run_cuda<R>(sub_spec(spec, Kind::C2C, 0, rank - 1, FFTW_FORWARD), run_cuda<R>(tail, x));
  }
  if (spec.kind == Kind::C2C && rank > 3) {
    Spec rest = sub_spec(spec, Kind::C2C, 3, rank, spec.sign);
    rest.scale = spec.scale;
    return run_cuda<R>(rest, run_cuda<R>(sub_spec(spec, Kind::C2C, 0, 3, spec.sign), x));
  }
  const DType real_dt = dtype_of<R>();
  const DType complex_dt = complex_type(real_dt);
  Dims perm;
  for (int a = 0; a < x.dim(); ++a) {
    if (std::find(spec.dims.begin(), spec.dims.end(), a) == spec.dims.end()) perm.push_back(a);
  }
  const int batch_dims = perm.size();
  for (int64_t d : spec.dims) perm.push_back(d);
  Dims inverse = Dims::filled(perm.size(), 0);
  for (int i = 0; i < perm.size(); ++i) inverse[static_cast<int>(perm[i])] = i;

  Tensor xp = x.permute(perm);
  Dims out_shape = xp.shape();
  for (int i = 0; i < rank; ++i) out_shape[batch_dims + i] = spec.n[i];
  const int last = out_shape.size() - 1;
  const int64_t n_last = spec.n.back();
  if (spec.kind == Kind::R2C) out_shape[last] = n_last / 2 + 1;
  Tensor out = empty(out_shape, {spec.kind == Kind::C2R ? real_dt : complex_dt, x.device()});
  if (out.numel() == 0) return out.permute(inverse).contiguous();

  // Per-bin weights along the (halved) last dim: scale, times pair_factor on
  // the bins that stand for two conjugate frequencies.
  const int64_t bins = n_last / 2 + 1;
  const bool pairs = spec.kind != Kind::C2C && spec.pair_factor != 1.0;
  Tensor weights;
  if (pairs || spec.kind == Kind::C2R) {
    std::vector<double> w(static_cast<size_t>(bins), spec.scale);
    const int64_t pair_end = std::min(bins, (n_last + 1) / 2);
    for (int64_t k = 1; k < pair_end; ++k) w[k] = spec.scale * spec.pair_factor;
    weights = from_vector(w).to(real_dt).to(x.device());
  }

  Tensor in;
  if (spec.kind == Kind::C2R) {
    in = mul(xp, weights).contiguous();  // a fresh buffer: cuFFT's c2r overwrites its input
    Tensor im = in.imag();
    Tensor dc = im.narrow(last, 0, 1);
    fill_(dc, 0.0);
    if (n_last % 2 == 0) {
      Tensor nyquist = im.narrow(last, n_last / 2, 1);
      fill_(nyquist, 0.0);
    }
  } else {
    in = xp.contiguous();
  }
  cuda::FftLayout layout;
  layout.rank = rank;
  for (int i = 0; i < rank; ++i) layout.n[i] = spec.n[i];
  layout.batch = 1;
  for (int i = 0; i < batch_dims; ++i) layout.batch *= out_shape[i];
  const int kind = spec.kind == Kind::C2C   ? cuda::kFftC2C
                   : spec.kind == Kind::R2C ? cuda::kFftR2C
                                            : cuda::kFftC2R;
  const bool inverse_dir =
      spec.kind == Kind::C2R || (spec.kind == Kind::C2C && spec.sign == FFTW_BACKWARD);
  cuda::fft_execute(x.device().index, kind, static_cast<int>(complex_dt), inverse_dir, layout,
                    in.data_ptr(), out.data_ptr(), cuda_ops::stream_of(x));
  cuda_ops::launched(x);
  if (spec.kind != Kind::C2R) {
    if (pairs) {
      out = mul(out, weights);
    } else if (spec.scale != 1.0) {
      cuda::launch_scale(static_cast<int>(complex_dt), out.data_ptr(), out.numel(), spec.scale,
                         cuda_ops::stream_of(x));
      cuda_ops::launched(x);
    }
  }
  return out.permute(inverse).contiguous();
}

template <typename R>
Tensor run_typed(const Spec& spec, Tensor x, bool owned) {
  if (x.device().is_cuda()) return run_cuda<R>(spec, x);
  const DType real_dt = dtype_of<R>();
  const DType complex_dt = complex_type(real_dt);
  const int last = static_cast<int>(spec.dims.back());
  const int64_t n_last = spec.n.back();
  Dims out_shape = x.shape();
  for (int i = 0; i < spec.dims.size(); ++i) out_shape[static_cast<int>(spec.dims[i])] = spec.n[i];
  IoDims d, h;

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

// The transform of `x` (any strides, no autograd). `owned`: x may be overwritten.
Tensor run(const Spec& spec, const Tensor& input, bool owned) {
  // Views and conversions below must not record: detach (an allocation) only when needed.
  Tensor x = autograd::tensor_requires_grad(input) ? input.detach() : input;
  const DType dt = x.dtype();
  const DType real_dt = is_complex(dt) ? real_type(dt) : (dt == DType::F64 ? dt : DType::F32);
  const DType want = spec.kind == Kind::R2C ? real_dt : complex_type(real_dt);
  if (dt != want) {
    x = x.to(want);
    owned = true;
  }
  Dims in_sizes = spec.n;
  if (spec.kind == Kind::C2R) in_sizes[in_sizes.size() - 1] = spec.n.back() / 2 + 1;
  x = resize_dims(x, spec.dims, in_sizes, &owned);
  if (real_dt == DType::F64) return run_typed<double>(spec, x, owned);
  return run_typed<float>(spec, x, owned);
}

// --- the pure backward --------------------------------------------------------

// Gradient w.r.t. the input (of shape `in_shape`, dtype `in_dtype`) of the
// transform `spec`, from the gradient `g` of its output.
Tensor backward(const Spec& spec, const Dims& in_shape, DType in_dtype, const Tensor& g) {
  profile::OpScope scope("fft_backward");
  Spec adj = spec;
  Tensor gx;
  switch (spec.kind) {
    case Kind::C2C:
      // (c F_sign)^H = c F_-sign.
      adj.sign = -spec.sign;
      gx = run(adj, g, false);
      break;
    case Kind::R2C:
      // rfft = the full DFT restricted to the half spectrum; its adjoint on a
      // real input is Re(F^H g) = irfft of g with the pair bins halved.
      adj.kind = Kind::C2R;
      adj.pair_factor = 0.5 * spec.pair_factor;
      gx = run(adj, g, false);
      break;
    case Kind::C2R:
      // irfft counts each pair bin twice (the bin and its mirror image).
      adj.kind = Kind::R2C;
      adj.pair_factor = 2.0 * spec.pair_factor;
      gx = run(adj, g, false);
      break;
  }
  Dims sizes;
  for (int64_t dim : spec.dims) sizes.push_back(in_shape[static_cast<int>(dim)]);
  gx = resize_dims(gx, spec.dims, sizes, nullptr);
  if (is_complex(gx.dtype()) && !is_complex(in_dtype)) gx = gx.real();
  return gx;
}

class FftBackward : public autograd::Node {
 public:
  FftBackward(Spec spec, Dims in_shape, DType in_dtype)
      : spec_(std::move(spec)), in_shape_(in_shape), in_dtype_(in_dtype) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (!grads[0].defined()) return {Tensor()};
    return {backward(spec_, in_shape_, in_dtype_, grads[0])};
  }
  const char* name() const override {
    switch (spec_.kind) {
      case Kind::R2C:
        return "RfftBackward";
      case Kind::C2R:
        return "IrfftBackward";
      default:
        return "FftBackward";
    }
  }

 private:
  Spec spec_;
  Dims in_shape_;
  DType in_dtype_;
};

// --- argument handling ----------------------------------------------------------

double norm_scale(FFTNorm norm, bool inverse, const Dims& n) {
  double total = 1;
  for (int64_t v : n) total *= static_cast<double>(v);
  switch (norm) {
    case FFTNorm::Ortho:
      return 1.0 / std::sqrt(total);
    case FFTNorm::Backward:
      return inverse ? 1.0 / total : 1.0;
    case FFTNorm::Forward:
      return inverse ? 1.0 : 1.0 / total;
  }
  return 1.0;
}

// Checks and defaults shared by every entry point, then forward + autograd.
// `s` entries of -1 take the default length; `dims` empty means numpy's default.
Tensor transform(const char* op, Kind kind, bool inverse, const Tensor& x, const Dims& s,
                 const Dims& dims_in, FFTNorm norm) {
  profile::OpScope scope(op);
  FK_CHECK(x.defined(), op, "a defined tensor", "an undefined one");
  if (kind == Kind::R2C) {
    FK_CHECK(!is_complex(x.dtype()), op, "a real input (use fft for complex input)",
             name(x.dtype()));
  }
  FK_CHECK(x.dtype() != DType::Bool, op, "a numeric input", name(x.dtype()));
  Dims dims = dims_in;
  if (dims.empty()) {
    FK_CHECK(s.size() <= x.dim(), op,
             fmt::format("at most {} signal sizes (the input's rank)", x.dim()), s.str());
    const int count = s.empty() ? x.dim() : s.size();
    for (int a = x.dim() - count; a < x.dim(); ++a) dims.push_back(a);
  }
  FK_CHECK(!dims.empty(), op, "at least one dim to transform", "none (a 0-d input)");
  FK_CHECK(s.empty() || s.size() == dims.size(), op,
           fmt::format("{} signal sizes (one per dim)", dims.size()), s.str());
  Spec spec;
  spec.kind = kind;
  spec.sign = inverse ? FFTW_BACKWARD : FFTW_FORWARD;
  for (int i = 0; i < dims.size(); ++i) {
    const int dim = wrap_dim(dims[i], x.dim(), op);
    FK_CHECK(std::find(spec.dims.begin(), spec.dims.end(), dim) == spec.dims.end(), op,
             "distinct dims", dims.str());
    spec.dims.push_back(dim);
    const bool last = i + 1 == dims.size();
    int64_t len = s.empty() ? -1 : s[i];
    FK_CHECK(len == -1 || len >= 1, op, "signal lengths >= 1 (or -1 for the default)", s.str());
    if (len == -1) len = kind == Kind::C2R && last ? 2 * (x.size(dim) - 1) : x.size(dim);
    FK_CHECK(len >= 1, op, "a signal length >= 1",
             fmt::format("{} along dim {} (input shape {})", len, dim, x.shape().str()));
    spec.n.push_back(len);
  }
  spec.scale = norm_scale(norm, inverse, spec.n);

  Tensor out = run(spec, x, false);
  if (autograd::needs_grad(x)) {
    auto node = std::make_shared<FftBackward>(spec, x.shape(), x.dtype());
    autograd::record(node, {x}, out);
  }
  return out;
}

// An n-d argument list as Dims (at most kMaxDims entries, like any shape).
Dims list(const char* op, const char* what, const std::vector<int64_t>& v) {
  FK_CHECK(v.size() <= static_cast<size_t>(kMaxDims), op,
           fmt::format("at most {} {}", kMaxDims, what), std::to_string(v.size()));
  return Dims(v);
}

Tensor transform_n(const char* op, Kind kind, bool inverse, const Tensor& x,
                   const std::vector<int64_t>& s, const std::vector<int64_t>& dims, FFTNorm norm) {
  return transform(op, kind, inverse, x, list(op, "signal sizes", s), list(op, "dims", dims), norm);
}

}  // namespace

const char* fft_backend() {
  return fftw_version;
}

Tensor fft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("fft", Kind::C2C, false, x, Dims{n}, Dims{dim}, norm);
}
Tensor ifft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("ifft", Kind::C2C, true, x, Dims{n}, Dims{dim}, norm);
}
Tensor rfft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("rfft", Kind::R2C, false, x, Dims{n}, Dims{dim}, norm);
}
Tensor irfft(const Tensor& x, int64_t n, int64_t dim, FFTNorm norm) {
  return transform("irfft", Kind::C2R, true, x, Dims{n}, Dims{dim}, norm);
}

Tensor fftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
            FFTNorm norm) {
  return transform_n("fftn", Kind::C2C, false, x, s, dims, norm);
}
Tensor ifftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("ifftn", Kind::C2C, true, x, s, dims, norm);
}
Tensor rfftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("rfftn", Kind::R2C, false, x, s, dims, norm);
}
Tensor irfftn(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
              FFTNorm norm) {
  return transform_n("irfftn", Kind::C2R, true, x, s, dims, norm);
}

Tensor fft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
            FFTNorm norm) {
  return transform_n("fft2", Kind::C2C, false, x, s, dims, norm);
}
Tensor ifft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("ifft2", Kind::C2C, true, x, s, dims, norm);
}
Tensor rfft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
             FFTNorm norm) {
  return transform_n("rfft2", Kind::R2C, false, x, s, dims, norm);
}
Tensor irfft2(const Tensor& x, const std::vector<int64_t>& s, const std::vector<int64_t>& dims,
              FFTNorm norm) {
  return transform_n("irfft2", Kind::C2R, true, x, s, dims, norm);
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
