// cuFFT on the emulated device: the plan and exec calls fieldkit makes
// (cufftCreate, cufftMakePlanMany64, cufftPlan2d, cufftSetStream, the six cufftExec*,
// cufftDestroy), with cuFFT 12's symbol names, linked in place of libcufft.
// Device memory is host memory, so a transform is FFTW's (libfftw3 /
// libfftw3f), run in the plan's stream order through fkemu::submit (the
// emulated runtime may defer it or record it in a graph). Unnormalized in
// both directions, as cuFFT: CUFFT_FORWARD is FFTW_FORWARD (e^-i),
// CUFFT_INVERSE is FFTW_BACKWARD.
//
// Layouts are cufftPlanMany's advanced layout: element x of batch b sits at
// b * dist + stride * (x . row-major strides of the embed sizes), embed[0]
// unused; a NULL inembed or onembed selects the basic layout (packed, stride
// 1, the strides and dists given ignored), where an in-place real transform
// reads or writes its real side padded to 2 (n/2 + 1) in the last dim.
//
// The FFTW plans are made when cuFFT makes its plan (FFTW_ESTIMATE |
// FFTW_UNALIGNED, under a mutex: FFTW's planner is not thread-safe; note that
// fk's CPU FFT plans under its own mutex, so the two must not plan on two
// threads at once) and executed on the caller's arrays with FFTW's new-array
// functions. An in-place transform runs out of place from a copy of its
// input, which gives what the device gives when the layouts allow in place.
//
// Errors, as cuFFT's codes: an unknown or unplanned handle is
// CUFFT_INVALID_PLAN; an unknown type CUFFT_INVALID_TYPE; rank outside 1..3,
// a size or batch < 1 CUFFT_INVALID_SIZE; an exec of another type than the
// plan's, a direction other than ±1, null data CUFFT_INVALID_VALUE. Stricter
// than cuFFT, where the device's result would be undefined rather than an
// error (CUFFT_INVALID_VALUE here): a stride < 1, a dist < 1 with batch > 1,
// an embed size below the transform's in dims 1.., an in-place exec whose
// input and output layouts do not coincide (same element strides and the
// same byte offsets of rows and batches), an out-of-place exec whose input
// and output spans overlap. cuFFT documents that an out-of-place C2R / Z2D
// overwrites its input: here it is filled with NaN afterwards, so a caller
// that reads it again sees it.
//
// Not modelled: work areas (cufftSetWorkArea, auto-allocation; *workSize
// reports the bytes an in-place exec copies), callbacks, half precision,
// multi-GPU (cufftXt*), plan sizes cuFFT cannot factor (FFTW takes any).
#include <cufft.h>
#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cuda_emu/emulated_device.h"

namespace {

// FFTW's planner and plan destruction.
std::mutex g_fftw_mu;

struct Layout {
  int64_t embed[3] = {};  // embed[0] is not read (dist spaces the batches)
  int64_t stride = 1, dist = 1;
};

// Elements between consecutive indices of dim i.
int64_t dim_stride(const Layout& l, int rank, int i) {
  int64_t s = l.stride;
  for (int j = i + 1; j < rank; ++j) s *= l.embed[j];
  return s;
}

bool is_real_type(cufftType t) {
  return t == CUFFT_R2C || t == CUFFT_C2R || t == CUFFT_D2Z || t == CUFFT_Z2D;
}
bool is_double(cufftType t) {
  return t == CUFFT_Z2Z || t == CUFFT_D2Z || t == CUFFT_Z2D;
}
bool real_input(cufftType t) {
  return t == CUFFT_R2C || t == CUFFT_D2Z;
}
bool real_output(cufftType t) {
  return t == CUFFT_C2R || t == CUFFT_Z2D;
}

size_t in_bytes(cufftType t) {
  return (is_double(t) ? 8 : 4) * (real_input(t) ? 1 : 2);
}
size_t out_bytes(cufftType t) {
  return (is_double(t) ? 8 : 4) * (real_output(t) ? 1 : 2);
}

// One FFTW plan (either precision), destroyed under the planner's mutex.
struct FftwPlan {
  void* plan = nullptr;
  bool dbl = false;
  ~FftwPlan() {
    if (plan == nullptr) return;
    std::lock_guard<std::mutex> lock(g_fftw_mu);
    if (dbl) {
      fftw_destroy_plan(static_cast<fftw_plan>(plan));
    } else {
      fftwf_destroy_plan(static_cast<fftwf_plan>(plan));
    }
  }
};

// A transform over one pair of layouts: its FFTW plans (C2C: forward and
// inverse) and the spans its input and output cover.
struct Geometry {
  cufftType type;
  int rank;
  int64_t n[3];
  int64_t batch;
  Layout in, out;
  std::shared_ptr<FftwPlan> forward, inverse;  // inverse: C2C / Z2Z only

  int64_t in_size(int i) const { return real_output(type) && i == rank - 1 ? n[i] / 2 + 1 : n[i]; }
  int64_t out_size(int i) const { return real_input(type) && i == rank - 1 ? n[i] / 2 + 1 : n[i]; }
  // Elements from the first to one past the last the layout touches.
  int64_t span(const Layout& l, bool input) const {
    int64_t last = (batch - 1) * l.dist;
    for (int i = 0; i < rank; ++i) {
      last += ((input ? in_size(i) : out_size(i)) - 1) * dim_stride(l, rank, i);
    }
    return last + 1;
  }
};

std::vector<fftw_iodim64> dims_of(const Geometry& g) {
  std::vector<fftw_iodim64> d(g.rank);
  for (int i = 0; i < g.rank; ++i) {
    d[i] = {g.n[i], dim_stride(g.in, g.rank, i), dim_stride(g.out, g.rank, i)};
  }
  return d;
}

// Plans g's transform in one direction on scratch arrays of its spans
// (FFTW_ESTIMATE reads and writes neither); nullptr if FFTW cannot.
std::shared_ptr<FftwPlan> make_fftw_plan(const Geometry& g, int sign) {
  const std::vector<fftw_iodim64> d = dims_of(g);
  const fftw_iodim64 batch{g.batch, g.in.dist, g.out.dist};
  const unsigned flags = FFTW_ESTIMATE | FFTW_UNALIGNED;
  std::vector<char> in(g.span(g.in, true) * in_bytes(g.type));
  std::vector<char> out(g.span(g.out, false) * out_bytes(g.type));
  void* i = in.data();
  void* o = out.data();
  auto p = std::make_shared<FftwPlan>();
  p->dbl = is_double(g.type);
  std::lock_guard<std::mutex> lock(g_fftw_mu);
  switch (g.type) {
    case CUFFT_C2C:
      p->plan = fftwf_plan_guru64_dft(g.rank, d.data(), 1, &batch, static_cast<fftwf_complex*>(i),
                                      static_cast<fftwf_complex*>(o), sign, flags);
      break;
    case CUFFT_Z2Z:
      p->plan = fftw_plan_guru64_dft(g.rank, d.data(), 1, &batch, static_cast<fftw_complex*>(i),
                                     static_cast<fftw_complex*>(o), sign, flags);
      break;
    case CUFFT_R2C:
      p->plan = fftwf_plan_guru64_dft_r2c(g.rank, d.data(), 1, &batch, static_cast<float*>(i),
                                          static_cast<fftwf_complex*>(o), flags);
      break;
    case CUFFT_D2Z:
      p->plan = fftw_plan_guru64_dft_r2c(g.rank, d.data(), 1, &batch, static_cast<double*>(i),
                                         static_cast<fftw_complex*>(o), flags);
      break;
    case CUFFT_C2R:
      p->plan =
          fftwf_plan_guru64_dft_c2r(g.rank, d.data(), 1, &batch, static_cast<fftwf_complex*>(i),
                                    static_cast<float*>(o), flags);
      break;
    case CUFFT_Z2D:
      p->plan = fftw_plan_guru64_dft_c2r(g.rank, d.data(), 1, &batch, static_cast<fftw_complex*>(i),
                                         static_cast<double*>(o), flags);
      break;
  }
  return p->plan != nullptr ? p : nullptr;
}

bool plan_geometry(Geometry& g) {
  g.forward = make_fftw_plan(g, FFTW_FORWARD);
  if (g.type == CUFFT_C2C || g.type == CUFFT_Z2Z) g.inverse = make_fftw_plan(g, FFTW_BACKWARD);
  return g.forward != nullptr &&
         (g.inverse != nullptr || (g.type != CUFFT_C2C && g.type != CUFFT_Z2Z));
}

void execute(const FftwPlan& p, cufftType t, void* in, void* out) {
  switch (t) {
    case CUFFT_C2C:
      return fftwf_execute_dft(static_cast<fftwf_plan>(p.plan), static_cast<fftwf_complex*>(in),
                               static_cast<fftwf_complex*>(out));
    case CUFFT_Z2Z:
      return fftw_execute_dft(static_cast<fftw_plan>(p.plan), static_cast<fftw_complex*>(in),
                              static_cast<fftw_complex*>(out));
    case CUFFT_R2C:
      return fftwf_execute_dft_r2c(static_cast<fftwf_plan>(p.plan), static_cast<float*>(in),
                                   static_cast<fftwf_complex*>(out));
    case CUFFT_D2Z:
      return fftw_execute_dft_r2c(static_cast<fftw_plan>(p.plan), static_cast<double*>(in),
                                  static_cast<fftw_complex*>(out));
    case CUFFT_C2R:
      return fftwf_execute_dft_c2r(static_cast<fftwf_plan>(p.plan), static_cast<fftwf_complex*>(in),
                                   static_cast<float*>(out));
    case CUFFT_Z2D:
      return fftw_execute_dft_c2r(static_cast<fftw_plan>(p.plan), static_cast<fftw_complex*>(in),
                                  static_cast<double*>(out));
  }
}

// Every input element of g (each batch, each index), as a C2R leaves them.
void fill_input_with_nan(const Geometry& g, void* in) {
  // The dims padded in front to three: (size, element stride) each.
  int64_t size[3] = {1, 1, 1}, stride[3] = {0, 0, 0};
  for (int i = 0; i < g.rank; ++i) {
    size[3 - g.rank + i] = g.in_size(i);
    stride[3 - g.rank + i] = dim_stride(g.in, g.rank, i);
  }
  for (int64_t b = 0; b < g.batch; ++b) {
    for (int64_t x = 0; x < size[0]; ++x) {
      for (int64_t y = 0; y < size[1]; ++y) {
        for (int64_t z = 0; z < size[2]; ++z) {
          const int64_t e = b * g.in.dist + x * stride[0] + y * stride[1] + z * stride[2];
          if (is_double(g.type)) {
            double* d = static_cast<double*>(in) + 2 * e;
            d[0] = d[1] = std::numeric_limits<double>::quiet_NaN();
          } else {
            float* f = static_cast<float*>(in) + 2 * e;
            f[0] = f[1] = std::numeric_limits<float>::quiet_NaN();
          }
        }
      }
    }
  }
}

// Whether an exec with in == out reads and writes the same places: equal
// element strides in the last dim (real and complex elements alike), equal
// byte offsets of every outer row and of every batch.
bool in_place_layouts_coincide(const Geometry& g) {
  if (g.in.stride != g.out.stride) return false;
  const size_t ib = in_bytes(g.type), ob = out_bytes(g.type);
  for (int i = 0; i + 1 < g.rank; ++i) {
    if (dim_stride(g.in, g.rank, i) * ib != dim_stride(g.out, g.rank, i) * ob) return false;
  }
  return g.batch == 1 || g.in.dist * ib == g.out.dist * ob;
}

struct Plan {
  bool made = false;
  cudaStream_t stream = nullptr;  // the legacy default stream until set
  bool basic = false;             // NULL embeds: the layout depends on in-place
  Geometry out_of_place;          // the layout of an out-of-place exec
  Geometry in_place;              // and of an in-place one (differs for basic real ones)
};

std::mutex g_mu;
std::unordered_map<cufftHandle, Plan> g_plans;
cufftHandle g_next_handle = 1;

Plan* find(cufftHandle h) {
  auto it = g_plans.find(h);
  return it == g_plans.end() ? nullptr : &it->second;
}

// The basic layout: packed, the real side padded when in place.
Geometry basic_geometry(Geometry g, bool in_place) {
  g.in.stride = g.out.stride = 1;
  for (int i = 0; i < g.rank; ++i) {
    g.in.embed[i] = g.in_size(i);
    g.out.embed[i] = g.out_size(i);
  }
  if (in_place && real_input(g.type)) g.in.embed[g.rank - 1] = 2 * (g.n[g.rank - 1] / 2 + 1);
  if (in_place && real_output(g.type)) g.out.embed[g.rank - 1] = 2 * (g.n[g.rank - 1] / 2 + 1);
  g.in.dist = g.out.dist = 1;
  for (int i = 0; i < g.rank; ++i) {
    g.in.dist *= g.in.embed[i];
    g.out.dist *= g.out.embed[i];
  }
  return g;
}

cufftResult make_plan(cufftHandle handle, int rank, const long long* n, const long long* inembed,
                      long long istride, long long idist, const long long* onembed,
                      long long ostride, long long odist, cufftType type, long long batch,
                      size_t* work_size) {
  std::lock_guard<std::mutex> lock(g_mu);
  Plan* p = find(handle);
  if (p == nullptr || p->made) return CUFFT_INVALID_PLAN;
  if (type != CUFFT_C2C && type != CUFFT_Z2Z && !is_real_type(type)) return CUFFT_INVALID_TYPE;
  if (n == nullptr || work_size == nullptr) return CUFFT_INVALID_VALUE;
  if (rank < 1 || rank > 3 || batch < 1) return CUFFT_INVALID_SIZE;
  for (int i = 0; i < rank; ++i) {
    if (n[i] < 1) return CUFFT_INVALID_SIZE;
  }
  Geometry g{};
  g.type = type;
  g.rank = rank;
  g.batch = batch;
  for (int i = 0; i < rank; ++i) g.n[i] = n[i];
  Plan made;
  made.basic = inembed == nullptr || onembed == nullptr;
  if (made.basic) {
    made.out_of_place = basic_geometry(g, false);
    made.in_place = basic_geometry(g, true);
  } else {
    g.in = {{}, istride, idist};
    g.out = {{}, ostride, odist};
    for (int i = 0; i < rank; ++i) {
      g.in.embed[i] = inembed[i];
      g.out.embed[i] = onembed[i];
      if (i >= 1 && (inembed[i] < g.in_size(i) || onembed[i] < g.out_size(i))) {
        return CUFFT_INVALID_VALUE;
      }
    }
    if (istride < 1 || ostride < 1 || (batch > 1 && (idist < 1 || odist < 1))) {
      return CUFFT_INVALID_VALUE;
    }
    made.out_of_place = made.in_place = g;
  }
  if (!plan_geometry(made.out_of_place)) return CUFFT_INTERNAL_ERROR;
  if (made.basic && is_real_type(type) && !plan_geometry(made.in_place)) {
    return CUFFT_INTERNAL_ERROR;
  }
  if (!made.basic || !is_real_type(type)) made.in_place = made.out_of_place;
  made.made = true;
  made.stream = p->stream;
  *work_size = made.in_place.span(made.in_place.in, true) * in_bytes(type);
  *p = std::move(made);
  return CUFFT_SUCCESS;
}

cufftResult exec(cufftHandle handle, cufftType type, void* in, void* out, int direction) {
  std::unique_lock<std::mutex> lock(g_mu);
  const Plan* p = find(handle);
  if (p == nullptr || !p->made) return CUFFT_INVALID_PLAN;
  if (p->out_of_place.type != type || in == nullptr || out == nullptr) return CUFFT_INVALID_VALUE;
  if (direction != CUFFT_FORWARD && direction != CUFFT_INVERSE) return CUFFT_INVALID_VALUE;
  const bool in_place = in == out;
  const Geometry& g = in_place ? p->in_place : p->out_of_place;
  const size_t in_span = g.span(g.in, true) * in_bytes(type);
  if (in_place) {
    if (!in_place_layouts_coincide(g)) return CUFFT_INVALID_VALUE;
  } else {
    const auto* i = static_cast<const char*>(in);
    const auto* o = static_cast<const char*>(out);
    const size_t out_span = g.span(g.out, false) * out_bytes(type);
    if (i < o + out_span && o < i + in_span) return CUFFT_INVALID_VALUE;
  }
  const bool inverse = (type == CUFFT_C2C || type == CUFFT_Z2Z) && direction == CUFFT_INVERSE;
  std::shared_ptr<FftwPlan> fftw = inverse ? g.inverse : g.forward;
  const Geometry geometry = g;
  const cudaStream_t stream = p->stream;
  // Unlocked: the stream model may run queued work of its own first.
  lock.unlock();
  ::fkemu::submit(stream, [fftw, geometry, type, in, out, in_place, in_span] {
    if (in_place) {
      std::vector<char> copy(static_cast<const char*>(in), static_cast<const char*>(in) + in_span);
      execute(*fftw, type, copy.data(), out);
    } else {
      execute(*fftw, type, in, out);
      if (real_output(type)) fill_input_with_nan(geometry, in);
    }
  });
  return CUFFT_SUCCESS;
}

}  // namespace

extern "C" {

cufftResult cufftCreate(cufftHandle* handle) {
  if (handle == nullptr) return CUFFT_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mu);
  *handle = g_next_handle++;
  g_plans[*handle] = Plan{};
  return CUFFT_SUCCESS;
}

cufftResult cufftMakePlanMany64(cufftHandle plan, int rank, long long int* n,
                                long long int* inembed, long long int istride, long long int idist,
                                long long int* onembed, long long int ostride, long long int odist,
                                cufftType type, long long int batch, size_t* workSize) {
  return make_plan(plan, rank, n, inembed, istride, idist, onembed, ostride, odist, type, batch,
                   workSize);
}

// cuFFT's simple 2-D plan: a batch of one, rows of nx by ny (ny contiguous).
cufftResult cufftPlan2d(cufftHandle* plan, int nx, int ny, cufftType type) {
  if (plan == nullptr) return CUFFT_INVALID_VALUE;
  cufftHandle h = 0;
  if (const cufftResult r = cufftCreate(&h); r != CUFFT_SUCCESS) return r;
  long long n[2] = {nx, ny};
  size_t work = 0;
  const cufftResult r = make_plan(h, 2, n, nullptr, 1, 0, nullptr, 1, 0, type, 1, &work);
  if (r != CUFFT_SUCCESS) {
    cufftDestroy(h);
    return r;
  }
  *plan = h;
  return CUFFT_SUCCESS;
}

cufftResult cufftSetStream(cufftHandle plan, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  Plan* p = find(plan);
  if (p == nullptr) return CUFFT_INVALID_PLAN;
  p->stream = stream;
  return CUFFT_SUCCESS;
}

cufftResult cufftDestroy(cufftHandle plan) {
  std::lock_guard<std::mutex> lock(g_mu);
  // cufft.h: CUFFT_PLAN_NULL is safe to destroy.
  if (plan == CUFFT_PLAN_NULL) return CUFFT_SUCCESS;
  // A transform still queued keeps its FFTW plans (shared) alive.
  return g_plans.erase(plan) == 1 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}

cufftResult cufftExecC2C(cufftHandle plan, cufftComplex* idata, cufftComplex* odata,
                         int direction) {
  return exec(plan, CUFFT_C2C, idata, odata, direction);
}
cufftResult cufftExecZ2Z(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleComplex* odata,
                         int direction) {
  return exec(plan, CUFFT_Z2Z, idata, odata, direction);
}
cufftResult cufftExecR2C(cufftHandle plan, cufftReal* idata, cufftComplex* odata) {
  return exec(plan, CUFFT_R2C, idata, odata, CUFFT_FORWARD);
}
cufftResult cufftExecD2Z(cufftHandle plan, cufftDoubleReal* idata, cufftDoubleComplex* odata) {
  return exec(plan, CUFFT_D2Z, idata, odata, CUFFT_FORWARD);
}
cufftResult cufftExecC2R(cufftHandle plan, cufftComplex* idata, cufftReal* odata) {
  return exec(plan, CUFFT_C2R, idata, odata, CUFFT_INVERSE);
}
cufftResult cufftExecZ2D(cufftHandle plan, cufftDoubleComplex* idata, cufftDoubleReal* odata) {
  return exec(plan, CUFFT_Z2D, idata, odata, CUFFT_INVERSE);
}

}  // extern "C"
