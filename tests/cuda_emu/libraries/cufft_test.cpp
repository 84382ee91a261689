// The cuFFT stand-in (cufft.cpp) against a naive DFT in double: every exec
// type (both C2C directions), ranks 1-3 with odd and even last sizes, batches
// in the basic layout (NULL embeds) and in advanced layouts with padded
// embeds, strides and dists (what lies outside the layout untouched), in
// place (basic real transforms padded, advanced ones with matching layouts),
// C2R of an R2C's output giving n times the signal, the NaN an out-of-place
// C2R leaves in its input, the stream a transform runs on, and the error
// codes of invalid calls.
#include <cufft.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cuda_emu/emulated_device.h"

namespace {

using cd = std::complex<double>;

bool is_double(cufftType t) {
  return t == CUFFT_Z2Z || t == CUFFT_D2Z || t == CUFFT_Z2D;
}
bool real_in(cufftType t) {
  return t == CUFFT_R2C || t == CUFFT_D2Z;
}
bool real_out(cufftType t) {
  return t == CUFFT_C2R || t == CUFFT_Z2D;
}

// A buffer of real or complex elements of one precision.
struct Buffer {
  bool dbl, cplx;
  std::vector<double> d;
  std::vector<float> f;
  Buffer(bool dbl_, bool cplx_, int64_t elements, double fill) : dbl(dbl_), cplx(cplx_) {
    const size_t scalars = static_cast<size_t>(elements) * (cplx ? 2 : 1);
    if (dbl)
      d.assign(scalars, fill);
    else
      f.assign(scalars, static_cast<float>(fill));
  }
  void* data() { return dbl ? static_cast<void*>(d.data()) : static_cast<void*>(f.data()); }
  int64_t elements() const {
    return static_cast<int64_t>((dbl ? d.size() : f.size()) / (cplx ? 2 : 1));
  }
  double scalar(size_t i) const { return dbl ? d[i] : f[i]; }
  cd get(int64_t e) const { return cplx ? cd(scalar(2 * e), scalar(2 * e + 1)) : cd(scalar(e), 0); }
  void put(int64_t e, cd v) {
    if (dbl) {
      if (cplx)
        d[2 * e] = v.real(), d[2 * e + 1] = v.imag();
      else
        d[e] = v.real();
    } else if (cplx) {
      f[2 * e] = static_cast<float>(v.real()), f[2 * e + 1] = static_cast<float>(v.imag());
    } else {
      f[e] = static_cast<float>(v.real());
    }
  }
};

// cufftPlanMany's advanced layout; embed[0] is not read.
struct Layout {
  long long embed[3];
  long long stride, dist;
};

// Where logical element `x` (row-major over `sizes`) of batch b lies.
int64_t offset(const Layout& l, int rank, const int64_t* sizes, int64_t b, int64_t x) {
  int64_t idx[3], rest = x;
  for (int i = rank - 1; i >= 0; --i) idx[i] = rest % sizes[i], rest /= sizes[i];
  int64_t pos = 0;
  for (int i = 0; i < rank; ++i) pos = pos * (i == 0 ? 1 : l.embed[i]) + idx[i];
  return b * l.dist + l.stride * pos;
}

int64_t count(int rank, const int64_t* sizes) {
  int64_t c = 1;
  for (int i = 0; i < rank; ++i) c *= sizes[i];
  return c;
}

// The full DFT of x (row-major over n), exponent sign * 2 pi i k.x / n.
std::vector<cd> dft(int rank, const int64_t* n, const std::vector<cd>& x, int sign) {
  const int64_t total = count(rank, n);
  std::vector<cd> out(static_cast<size_t>(total));
  for (int64_t k = 0; k < total; ++k) {
    cd sum = 0;
    for (int64_t j = 0; j < total; ++j) {
      double phase = 0;
      int64_t kr = k, jr = j;
      for (int i = rank - 1; i >= 0; --i) {
        phase += static_cast<double>((kr % n[i]) * (jr % n[i])) / static_cast<double>(n[i]);
        kr /= n[i], jr /= n[i];
      }
      sum += x[j] * std::polar(1.0, sign * 2 * std::numbers::pi * phase);
    }
    out[k] = sum;
  }
  return out;
}

// The half spectrum (last dim n/2 + 1) of a full one.
std::vector<cd> half_of(int rank, const int64_t* n, const std::vector<cd>& full) {
  int64_t h[3];
  for (int i = 0; i < rank; ++i) h[i] = i == rank - 1 ? n[i] / 2 + 1 : n[i];
  std::vector<cd> out(static_cast<size_t>(count(rank, h)));
  for (int64_t e = 0; e < static_cast<int64_t>(out.size()); ++e) {
    const int64_t last = e % h[rank - 1], row = e / h[rank - 1];
    out[e] = full[row * n[rank - 1] + last];
  }
  return out;
}

struct Transform {
  cufftType type;
  int rank;
  int64_t n[3];
  int64_t batch;
  int direction = CUFFT_FORWARD;  // C2C / Z2Z
};

std::string name_of(const Transform& t) {
  std::string s = "type " + std::to_string(t.type) + " n";
  for (int i = 0; i < t.rank; ++i) {
    s += ' ';
    s += std::to_string(t.n[i]);
  }
  return s + " batch " + std::to_string(t.batch) + " dir " + std::to_string(t.direction);
}

// Logical sizes of the input and output sides.
void sides(const Transform& t, int64_t* in, int64_t* out) {
  for (int i = 0; i < t.rank; ++i) {
    const bool last = i == t.rank - 1;
    in[i] = last && real_out(t.type) ? t.n[i] / 2 + 1 : t.n[i];
    out[i] = last && real_in(t.type) ? t.n[i] / 2 + 1 : t.n[i];
  }
}

// The packed layout of `sizes`, the last dim padded to `last`.
Layout packed(int rank, const int64_t* sizes, int64_t last) {
  Layout l{{1, 1, 1}, 1, 1};
  for (int i = 0; i < rank; ++i) l.embed[i] = i == rank - 1 ? last : sizes[i];
  for (int i = 0; i < rank; ++i) l.dist *= l.embed[i];
  return l;
}

int64_t span(const Layout& l, int rank, const int64_t* sizes, int64_t batch) {
  return offset(l, rank, sizes, batch - 1, count(rank, sizes) - 1) + 1;
}

// Plans t (advanced layouts, or the basic one when `in_layout` is null),
// fills the input in its layout, executes (in place when in_place), and
// checks the output in its layout against the naive DFT, and that nothing
// outside the output layout changed (out of place).
void check_transform(const Transform& t, const Layout* in_layout, const Layout* out_layout,
                     bool in_place, uint32_t seed) {
  SCOPED_TRACE(name_of(t) + (in_layout ? " advanced" : " basic") + (in_place ? " in place" : ""));
  const bool dbl = is_double(t.type);
  int64_t in_sizes[3], out_sizes[3];
  sides(t, in_sizes, out_sizes);
  const int64_t last = t.n[t.rank - 1], padded = 2 * (last / 2 + 1);
  // The basic layout's: packed, the real side padded in place.
  const Layout in_l =
      in_layout
          ? *in_layout
          : packed(t.rank, in_sizes, in_place && real_in(t.type) ? padded : in_sizes[t.rank - 1]);
  const Layout out_l = out_layout
                           ? *out_layout
                           : packed(t.rank, out_sizes,
                                    in_place && real_out(t.type) ? padded : out_sizes[t.rank - 1]);
  const double kSentinel = 3.5;
  Buffer in(dbl, !real_in(t.type), span(in_l, t.rank, in_sizes, t.batch), kSentinel);
  Buffer out(dbl, !real_out(t.type), span(out_l, t.rank, out_sizes, t.batch), kSentinel);
  // In place: one buffer big enough for either side (its element size).
  if (in_place) {
    const int64_t in_scalars = in.elements() * (in.cplx ? 2 : 1);
    const int64_t out_scalars = out.elements() * (out.cplx ? 2 : 1);
    const int64_t scalars = std::max(in_scalars, out_scalars);
    in = Buffer(dbl, in.cplx, in.cplx ? (scalars + 1) / 2 : scalars, kSentinel);
  }
  // Signals per batch (logical, row-major) and what the transform must give.
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const int64_t total = count(t.rank, t.n);
  std::vector<std::vector<cd>> want(t.batch);
  std::vector<double> magnitude(t.batch);
  for (int64_t b = 0; b < t.batch; ++b) {
    std::vector<cd> x(static_cast<size_t>(total));
    for (cd& v : x) v = real_in(t.type) || real_out(t.type) ? cd(u(rng), 0) : cd(u(rng), u(rng));
    std::vector<cd> input;
    if (real_out(t.type)) {
      // A Hermitian half spectrum: the R2C (in double) of a real signal; its C2R is total * x.
      input = half_of(t.rank, t.n, dft(t.rank, t.n, x, -1));
      for (cd& v : x) v *= static_cast<double>(total);
      want[b] = x;
    } else {
      input = x;
      const std::vector<cd> full = dft(t.rank, t.n, x, real_in(t.type) ? -1 : t.direction);
      want[b] = real_in(t.type) ? half_of(t.rank, t.n, full) : full;
    }
    for (int64_t e = 0; e < count(t.rank, in_sizes); ++e) {
      in.put(offset(in_l, t.rank, in_sizes, b, e), input[e]);
      magnitude[b] += std::abs(input[e]);
    }
  }
  cufftHandle plan;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  long long n[3] = {t.n[0], t.n[1], t.n[2]};
  Layout pin = in_l, pout = out_l;
  size_t work = 0;
  ASSERT_EQ(cufftMakePlanMany64(plan, t.rank, n, in_layout ? pin.embed : nullptr, in_l.stride,
                                in_l.dist, out_layout ? pout.embed : nullptr, out_l.stride,
                                out_l.dist, t.type, t.batch, &work),
            CUFFT_SUCCESS);
  void* i = in.data();
  void* o = in_place ? i : out.data();
  cufftResult r = CUFFT_INTERNAL_ERROR;
  switch (t.type) {
    case CUFFT_C2C:
      r = cufftExecC2C(plan, static_cast<cufftComplex*>(i), static_cast<cufftComplex*>(o),
                       t.direction);
      break;
    case CUFFT_Z2Z:
      r = cufftExecZ2Z(plan, static_cast<cufftDoubleComplex*>(i),
                       static_cast<cufftDoubleComplex*>(o), t.direction);
      break;
    case CUFFT_R2C:
      r = cufftExecR2C(plan, static_cast<cufftReal*>(i), static_cast<cufftComplex*>(o));
      break;
    case CUFFT_D2Z:
      r = cufftExecD2Z(plan, static_cast<cufftDoubleReal*>(i), static_cast<cufftDoubleComplex*>(o));
      break;
    case CUFFT_C2R:
      r = cufftExecC2R(plan, static_cast<cufftComplex*>(i), static_cast<cufftReal*>(o));
      break;
    case CUFFT_Z2D:
      r = cufftExecZ2D(plan, static_cast<cufftDoubleComplex*>(i), static_cast<cufftDoubleReal*>(o));
      break;
  }
  ASSERT_EQ(r, CUFFT_SUCCESS);
  EXPECT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
  // In place the output is read from the input's buffer, as the output's type.
  Buffer result = out;
  if (in_place) {
    result = Buffer(dbl, out.cplx, 0, 0);
    if (dbl)
      result.d = in.d;
    else
      result.f = in.f;
  }
  const double eps = dbl ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  std::vector<bool> inside(static_cast<size_t>(result.elements()), false);
  int wrong = 0;
  for (int64_t b = 0; b < t.batch; ++b) {
    // An FFT's error: a few roundings per level, each of at most sum |x|.
    const double tol = 8 * eps * (std::log2(static_cast<double>(total)) + 2) * magnitude[b] *
                       (real_out(t.type) ? 2.0 : 1.0);
    for (int64_t e = 0; e < count(t.rank, out_sizes); ++e) {
      const int64_t at = offset(out_l, t.rank, out_sizes, b, e);
      inside[at] = true;
      const cd got = result.get(at);
      if (!(std::abs(got - want[b][e]) <= tol) && wrong++ < 5) {
        ADD_FAILURE() << "batch " << b << " element " << e << ": " << got << ", want " << want[b][e]
                      << " (tol " << tol << ")";
      }
    }
  }
  if (!in_place) {
    for (int64_t e = 0; e < result.elements(); ++e) {
      const cd s = result.cplx ? cd(kSentinel, kSentinel) : cd(kSentinel, 0);
      if (!inside[e] && result.get(e) != s && wrong++ < 5) {
        ADD_FAILURE() << "element " << e << " outside the output layout was written";
      }
    }
  }
}

const cufftType kTypes[] = {CUFFT_C2C, CUFFT_Z2Z, CUFFT_R2C, CUFFT_D2Z, CUFFT_C2R, CUFFT_Z2D};
const Transform kShapes[] = {
    {CUFFT_C2C, 1, {12, 1, 1}, 2}, {CUFFT_C2C, 1, {7, 1, 1}, 3}, {CUFFT_C2C, 2, {6, 5, 1}, 2},
    {CUFFT_C2C, 3, {4, 3, 6}, 2},  {CUFFT_C2C, 3, {3, 2, 5}, 1},
};

// The stand-in's own behaviour: its work runs when submitted (no stream
// model; this binary links the emulated runtime's, installed again after
// each test), and a test installs its own where it looks at the order.
class Cufft : public ::testing::Test {
 protected:
  Cufft() { fkemu::set_stream_model(nullptr); }
  ~Cufft() override { fkemu::set_stream_model(runtime_model_); }

 private:
  fkemu::StreamModel runtime_model_ = fkemu::stream_model();
};

TEST_F(Cufft, EveryTypeAndRankInTheBasicLayoutMatchesNaiveDft) {
  uint32_t seed = 1;
  for (cufftType type : kTypes) {
    for (Transform t : kShapes) {
      t.type = type;
      check_transform(t, nullptr, nullptr, false, seed++);
      if (type == CUFFT_C2C || type == CUFFT_Z2Z) {
        t.direction = CUFFT_INVERSE;
        check_transform(t, nullptr, nullptr, false, seed++);
      }
    }
  }
}

// Embeds larger than the transform, element strides 2 and 3, dists with gaps.
TEST_F(Cufft, AdvancedLayoutsWithStridesAndDists) {
  uint32_t seed = 100;
  for (cufftType type : kTypes) {
    for (Transform t : kShapes) {
      t.type = type;
      int64_t in_sizes[3], out_sizes[3];
      sides(t, in_sizes, out_sizes);
      Layout in{{0, 0, 0}, 2, 0}, out{{0, 0, 0}, 3, 0};
      in.dist = 1, out.dist = 1;
      for (int i = 0; i < t.rank; ++i) {
        in.embed[i] = in_sizes[i] + (i == 0 ? 0 : 1);
        out.embed[i] = out_sizes[i] + (i == 0 ? 0 : 2);
        in.dist *= in.embed[i];
        out.dist *= out.embed[i];
      }
      in.dist = in.dist * in.stride + 5;
      out.dist = out.dist * out.stride + 1;
      check_transform(t, &in, &out, false, seed++);
      // Batches interleaved: element stride = batch, dist 1.
      Layout inter_in = in, inter_out = out;
      inter_in.stride = inter_out.stride = t.batch;
      inter_in.dist = inter_out.dist = 1;
      check_transform(t, &inter_in, &inter_out, false, seed++);
    }
  }
}

TEST_F(Cufft, InPlace) {
  uint32_t seed = 200;
  for (cufftType type : kTypes) {
    for (Transform t : kShapes) {
      t.type = type;
      // The basic layout: real sides padded to 2 (n/2 + 1).
      check_transform(t, nullptr, nullptr, true, seed++);
      // Advanced, the real side padded by hand: the same bytes for each row.
      int64_t in_sizes[3], out_sizes[3];
      sides(t, in_sizes, out_sizes);
      const int64_t padded = 2 * (t.n[t.rank - 1] / 2 + 1);
      const Layout in = packed(t.rank, in_sizes, real_in(t.type) ? padded : in_sizes[t.rank - 1]);
      const Layout out =
          packed(t.rank, out_sizes, real_out(t.type) ? padded : out_sizes[t.rank - 1]);
      check_transform(t, &in, &out, true, seed++);
    }
  }
}

// R2C then C2R (each unnormalized) gives n times the signal, in both precisions.
TEST_F(Cufft, RealRoundTripScalesByN) {
  for (bool dbl : {false, true}) {
    SCOPED_TRACE(dbl ? "double" : "single");
    long long n[2] = {6, 9};
    const int64_t total = 54, half = 6 * 5;
    cufftHandle fwd, inv;
    size_t work;
    ASSERT_EQ(cufftCreate(&fwd), CUFFT_SUCCESS);
    ASSERT_EQ(cufftCreate(&inv), CUFFT_SUCCESS);
    ASSERT_EQ(cufftMakePlanMany64(fwd, 2, n, nullptr, 1, 0, nullptr, 1, 0,
                                  dbl ? CUFFT_D2Z : CUFFT_R2C, 1, &work),
              CUFFT_SUCCESS);
    ASSERT_EQ(cufftMakePlanMany64(inv, 2, n, nullptr, 1, 0, nullptr, 1, 0,
                                  dbl ? CUFFT_Z2D : CUFFT_C2R, 1, &work),
              CUFFT_SUCCESS);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-1, 1);
    std::vector<double> xd(total), yd(total), sd(2 * half);
    std::vector<float> xf(total), yf(total), sf(2 * half);
    for (int64_t e = 0; e < total; ++e) xd[e] = xf[e] = static_cast<float>(u(rng));
    if (dbl) {
      ASSERT_EQ(cufftExecD2Z(fwd, xd.data(), reinterpret_cast<cufftDoubleComplex*>(sd.data())),
                CUFFT_SUCCESS);
      ASSERT_EQ(cufftExecZ2D(inv, reinterpret_cast<cufftDoubleComplex*>(sd.data()), yd.data()),
                CUFFT_SUCCESS);
    } else {
      ASSERT_EQ(cufftExecR2C(fwd, xf.data(), reinterpret_cast<cufftComplex*>(sf.data())),
                CUFFT_SUCCESS);
      ASSERT_EQ(cufftExecC2R(inv, reinterpret_cast<cufftComplex*>(sf.data()), yf.data()),
                CUFFT_SUCCESS);
    }
    const double tol = dbl ? 1e-12 : 1e-4;
    for (int64_t e = 0; e < total; ++e) {
      const double got = dbl ? yd[e] : yf[e];
      EXPECT_NEAR(got, total * xd[e], tol * total) << "element " << e;
    }
    // cuFFT documents that an out-of-place C2R overwrites its input.
    for (int64_t e = 0; e < 2 * half; ++e) {
      EXPECT_TRUE(std::isnan(dbl ? sd[e] : sf[e])) << "C2R input scalar " << e << " survived";
    }
    cufftDestroy(fwd);
    cufftDestroy(inv);
  }
}

// cufftPlan2d(nx, ny): one transform of nx rows of ny (ny contiguous), in
// the basic layout, as fk_cuda_bench's reference plans it.
TEST_F(Cufft, Plan2dIsOneRowMajorTransformInTheBasicLayout) {
  const int64_t n[2] = {6, 9};
  const int64_t total = 54, half = 6 * 5;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<cd> x(total);
  std::vector<float> xf(total);
  for (int64_t e = 0; e < total; ++e) x[e] = xf[e] = static_cast<float>(u(rng));
  const std::vector<cd> want = half_of(2, n, dft(2, n, x, -1));
  cufftHandle r2c = 0, c2c = 0;
  ASSERT_EQ(cufftPlan2d(&r2c, 6, 9, CUFFT_R2C), CUFFT_SUCCESS);
  std::vector<std::complex<float>> spectrum(half);
  ASSERT_EQ(cufftExecR2C(r2c, xf.data(), reinterpret_cast<cufftComplex*>(spectrum.data())),
            CUFFT_SUCCESS);
  for (int64_t e = 0; e < half; ++e)
    EXPECT_LT(std::abs(cd(spectrum[e]) - want[e]), 1e-4) << "element " << e;
  // A plan of another type refuses this exec.
  EXPECT_EQ(cufftExecC2R(r2c, reinterpret_cast<cufftComplex*>(spectrum.data()), xf.data()),
            CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftDestroy(r2c), CUFFT_SUCCESS);
  ASSERT_EQ(cufftPlan2d(&c2c, 9, 6, CUFFT_C2C), CUFFT_SUCCESS);
  EXPECT_EQ(cufftDestroy(c2c), CUFFT_SUCCESS);
  cufftHandle bad = 0;
  EXPECT_EQ(cufftPlan2d(&bad, 0, 9, CUFFT_R2C), CUFFT_INVALID_SIZE);
  EXPECT_EQ(cufftPlan2d(&bad, 6, 9, static_cast<cufftType>(0x7)), CUFFT_INVALID_TYPE);
  EXPECT_EQ(cufftPlan2d(nullptr, 6, 9, CUFFT_R2C), CUFFT_INVALID_VALUE);
}

std::vector<std::pair<cudaStream_t, fkemu::StreamWork>> g_held;
void hold(cudaStream_t s, fkemu::StreamWork w) {
  g_held.emplace_back(s, std::move(w));
}

// A transform runs in its plan's stream's order, reading its input when it
// runs; a plan destroyed meanwhile keeps what the queued transform needs.
TEST_F(Cufft, ExecRunsOnThePlansStream) {
  cufftHandle plan;
  ASSERT_EQ(cufftCreate(&plan), CUFFT_SUCCESS);
  const auto stream = reinterpret_cast<cudaStream_t>(0x4560);
  ASSERT_EQ(cufftSetStream(plan, stream), CUFFT_SUCCESS);  // before the plan is made
  long long n[1] = {4};
  size_t work;
  ASSERT_EQ(cufftMakePlanMany64(plan, 1, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &work),
            CUFFT_SUCCESS);
  std::vector<cufftComplex> x(4, {0, 0}), y(4, {9, 9});
  fkemu::set_stream_model(hold);
  const cufftResult r = cufftExecC2C(plan, x.data(), y.data(), CUFFT_FORWARD);
  fkemu::set_stream_model(nullptr);
  ASSERT_EQ(r, CUFFT_SUCCESS);
  ASSERT_EQ(g_held.size(), 1u);
  EXPECT_EQ(g_held[0].first, stream);
  EXPECT_EQ(y[0].x, 9) << "ran before its stream reached it";
  ASSERT_EQ(cufftDestroy(plan), CUFFT_SUCCESS);
  x[0] = {1, 0};  // an impulse: its transform is all ones
  g_held[0].second();
  g_held.clear();
  for (const cufftComplex& v : y) {
    EXPECT_EQ(v.x, 1);
    EXPECT_EQ(v.y, 0);
  }
}

TEST_F(Cufft, InvalidCallsReturnCufftResult) {
  long long n[3] = {8, 8, 8};
  size_t work;
  EXPECT_EQ(cufftCreate(nullptr), CUFFT_INVALID_VALUE);
  // Plans that do not exist, or are not made yet.
  EXPECT_EQ(cufftMakePlanMany64(12345, 1, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, &work),
            CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftSetStream(12345, nullptr), CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftDestroy(12345), CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftDestroy(CUFFT_PLAN_NULL), CUFFT_SUCCESS);
  std::vector<cufftComplex> a(1024), b(1024);
  cufftHandle p;
  ASSERT_EQ(cufftCreate(&p), CUFFT_SUCCESS);
  EXPECT_EQ(cufftExecC2C(p, a.data(), b.data(), CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  // Bad plan arguments.
  auto make = [&](int rank, long long* dims, cufftType type, long long batch) {
    return cufftMakePlanMany64(p, rank, dims, nullptr, 1, 0, nullptr, 1, 0, type, batch, &work);
  };
  EXPECT_EQ(make(1, n, static_cast<cufftType>(0x7f), 1), CUFFT_INVALID_TYPE);
  EXPECT_EQ(make(0, n, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  EXPECT_EQ(make(4, n, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  long long zero[2] = {8, 0}, negative[1] = {-4};
  EXPECT_EQ(make(2, zero, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  EXPECT_EQ(make(1, negative, CUFFT_C2C, 1), CUFFT_INVALID_SIZE);
  EXPECT_EQ(make(1, n, CUFFT_C2C, 0), CUFFT_INVALID_SIZE);
  EXPECT_EQ(make(1, nullptr, CUFFT_C2C, 1), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftMakePlanMany64(p, 1, n, nullptr, 1, 0, nullptr, 1, 0, CUFFT_C2C, 1, nullptr),
            CUFFT_INVALID_VALUE);
  long long small[2] = {8, 7}, fits[2] = {8, 8};
  EXPECT_EQ(cufftMakePlanMany64(p, 2, fits, fits, 0, 64, fits, 1, 64, CUFFT_C2C, 2, &work),
            CUFFT_INVALID_VALUE);  // stride 0
  EXPECT_EQ(cufftMakePlanMany64(p, 2, fits, fits, 1, 0, fits, 1, 64, CUFFT_C2C, 2, &work),
            CUFFT_INVALID_VALUE);  // dist 0 with a batch
  EXPECT_EQ(cufftMakePlanMany64(p, 2, fits, small, 1, 64, fits, 1, 64, CUFFT_C2C, 1, &work),
            CUFFT_INVALID_VALUE);  // a row of 8 in an embed of 7
  // A made plan: remade, or executed with the wrong type, direction or data.
  ASSERT_EQ(make(1, n, CUFFT_C2C, 1), CUFFT_SUCCESS);
  EXPECT_EQ(make(1, n, CUFFT_C2C, 1), CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftExecZ2Z(p, reinterpret_cast<cufftDoubleComplex*>(a.data()),
                         reinterpret_cast<cufftDoubleComplex*>(b.data()), CUFFT_FORWARD),
            CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecR2C(p, reinterpret_cast<cufftReal*>(a.data()), b.data()), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecC2C(p, a.data(), b.data(), 0), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecC2C(p, nullptr, b.data(), CUFFT_FORWARD), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecC2C(p, a.data(), nullptr, CUFFT_FORWARD), CUFFT_INVALID_VALUE);
  // Out of place with input and output overlapping.
  EXPECT_EQ(cufftExecC2C(p, a.data(), a.data() + 4, CUFFT_FORWARD), CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecC2C(p, a.data(), a.data() + 8, CUFFT_FORWARD), CUFFT_SUCCESS);
  EXPECT_EQ(cufftDestroy(p), CUFFT_SUCCESS);
  EXPECT_EQ(cufftExecC2C(p, a.data(), b.data(), CUFFT_FORWARD), CUFFT_INVALID_PLAN);
  EXPECT_EQ(cufftDestroy(p), CUFFT_INVALID_PLAN);

  // In place with an unpadded real side: the rows' output overruns the next
  // rows' input on the device.
  cufftHandle r;
  ASSERT_EQ(cufftCreate(&r), CUFFT_SUCCESS);
  long long dims[2] = {4, 6}, real_embed[2] = {4, 6}, cplx_embed[2] = {4, 4};
  ASSERT_EQ(
      cufftMakePlanMany64(r, 2, dims, real_embed, 1, 24, cplx_embed, 1, 16, CUFFT_R2C, 1, &work),
      CUFFT_SUCCESS);
  std::vector<float> buf(64);
  EXPECT_EQ(cufftExecR2C(r, buf.data(), reinterpret_cast<cufftComplex*>(buf.data())),
            CUFFT_INVALID_VALUE);
  EXPECT_EQ(cufftExecR2C(r, buf.data(), reinterpret_cast<cufftComplex*>(buf.data() + 32)),
            CUFFT_SUCCESS);
  cufftDestroy(r);
}

}  // namespace
