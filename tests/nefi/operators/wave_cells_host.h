#pragma once
// The wave device's kernels run on the host (what the wave cell tests share):
// every kernel of nefi/cuda/wave_cells.h and wave_initial_cells.h as a loop
// over its threads in wave.cu's launch geometry, threads in order or last to
// first; the CPU reference without FMA contraction (FK_CPU_ISA=generic, whose
// products and sums are rounded one by one as nvcc --fmad=false rounds them);
// the problems compared (every absorbing layer, order 2 and 4, 1-D to 3-D,
// two shots and three receivers) and a bit-for-bit comparison.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "fk/knobs.h"
#include "fk/tensor.h"
#include "nefi/cuda/wave_cell_layout.h"
#include "nefi/cuda/wave_cells.h"
#include "nefi/cuda/wave_initial_cells.h"
#include "nefi/operators/wave/leapfrog.h"
#include "nefi/operators/wave/wave_propagation.h"

namespace nefi::wave_cells_test {

namespace cu = nefi::cuda;

// Each device kernel as a loop over its threads (wave.cu's launch geometry).
struct HostKernels {
  // Threads run last to first when set: a kernel where one thread reads what
  // another writes in the same launch would then give other bits (a GPU runs
  // them in no set order).
  static inline bool reversed = false;
  template <typename Fn>
  static void threads(int64_t n, Fn&& fn) {
    for (int64_t i = 0; i < n; ++i) fn(reversed ? n - 1 - i : i);
  }
  template <typename T>
  static void step(const cu::WaveCells<T>& g, const cu::WaveCoefficientsView<T>& co, int64_t shots,
                   const T* up, const T* u, T* un, const cu::AxisFields<T>& psi, void*) {
    threads(shots * g.padded, [&](int64_t t) {
      cu::step_cell(g, co, up, u, un, psi, (t / g.padded) * g.numel,
                    cu::padded_cell(g, t % g.padded).p);
    });
    if (!g.pml) return;
    threads(shots * g.padded, [&](int64_t t) {
      cu::psi_cell(g, co, u, un, psi, (t / g.padded) * g.numel, cu::padded_cell(g, t % g.padded).p);
    });
  }
  template <typename T>
  static void sources(const cu::WaveCells<T>& g, const cu::StencilsView& src, const T* ad,
                      const double* wavelet, int64_t n, T* un, void*) {
    threads(src.count, [&](int64_t s) { cu::source_cell(g, src, ad, wavelet, n, un, s); });
  }
  template <typename T>
  static void sample(const cu::WaveCells<T>& g, const cu::StencilsView& rec, int64_t shots,
                     const T* u, T* traces, int64_t n_t, int64_t j, void*) {
    threads(shots * rec.count, [&](int64_t t) {
      traces[t * n_t + j] = cu::sample_cell(g, rec, u, t / rec.count, t % rec.count);
    });
  }
  template <typename T>
  static void inject_traces(const cu::WaveCells<T>& g, const cu::CellStencilsView& rec,
                            int64_t shots, const T* gb, int64_t n_t, int64_t j, T* lam, void*) {
    threads(shots * rec.count, [&](int64_t t) {
      cu::inject_traces_cell(g, rec, gb, n_t, j, lam, t / rec.count, t % rec.count);
    });
  }
  template <typename T>
  static void adjoint(const cu::WaveCells<T>& g, const cu::WaveCoefficientsView<T>& co,
                      int64_t shots, T* lam_c, const T* lam_p, T* out_cur, T* out_prev, T* kl,
                      const cu::AxisFields<T>& mu, const T* u_n, const T* u_np1, T* kbar,
                      const cu::AxisFields<T>& fbar, void*) {
    const int64_t pad = g.padded;
    if (g.pml)
      threads(shots * pad, [&](int64_t t) {
        cu::psi_transpose_cell(g, co, mu, lam_c, out_prev, (t / pad) * g.numel,
                               cu::padded_cell(g, t % pad).p);
      });
    threads(shots * g.numel, [&](int64_t t) {
      cu::adjoint_prepare_cell(g, co, lam_c, kl, mu, u_n, u_np1, fbar, (t / g.numel) * g.numel,
                               t % g.numel);
    });
    threads(shots * pad, [&](int64_t t) {
      cu::adjoint_cell(g, co, lam_c, kl, lam_p, out_cur, out_prev, kbar, u_n, (t / pad) * g.numel,
                       cu::padded_cell(g, t % pad).p);
    });
  }
  template <typename T>
  static void copy(const T* src, T* dst, int64_t n, void*) {
    std::memcpy(dst, src, n * sizeof(T));
  }
  template <typename T>
  static void kappa_gradient(const cu::WaveCells<T>& g, const double* kpk,
                             const cu::AxisFields<const double>& bpk, int64_t shots, const T* kbar,
                             const cu::AxisFields<T>& fbar, double* total, void*) {
    threads(g.padded, [&](int64_t t) {
      const int64_t p = cu::padded_cell(g, t).p;
      total[p] = cu::kappa_gradient_cell(g, kpk, bpk, shots, kbar, fbar, p);
    });
  }
  template <typename T>
  static void embed(const cu::WaveCells<T>& g, const T* p0, T* x, void*) {
    threads(g.domain, [&](int64_t q) { x[cu::domain_cell(g, q)] = p0[q]; });
  }
  template <typename T>
  static void scaled_laplacian(const cu::WaveCells<T>& g, const T* k, const T* u, T* out, void*) {
    threads(g.padded, [&](int64_t t) { cu::scaled_laplacian_cell(g, k, u, out, t); });
  }
  template <typename T>
  static void scaled_product(const T* k, const T* u, T* ku, int64_t n, void*) {
    threads(n, [&](int64_t p) { cu::scaled_product_cell(k, u, ku, p); });
  }
  template <typename T>
  static void initial_adjoint_end(const cu::WaveCells<T>& g, const T* u, const T* ku, const T* lam0,
                                  T* out, void*) {
    threads(g.domain, [&](int64_t q) { out[q] = cu::initial_adjoint_cell(g, u, ku, lam0, q); });
  }
  template <typename T>
  static void sensor_samples(const T* fine, int64_t n_rec, int64_t n_fine, int64_t every,
                             const double* w, int64_t half, int64_t n_t, T* out, void*) {
    threads(n_rec * n_t, [&](int64_t t) {
      out[t] =
          static_cast<T>(cu::sensor_sample_cell(fine, n_fine, every, w, half, t / n_t, t % n_t));
    });
  }
  template <typename T>
  static void sensor_adjoint(const double* g, int64_t n_rec, int64_t n_t, int64_t n_fine,
                             int64_t every, const double* w, int64_t half, T* out, void*) {
    threads(n_rec * n_fine, [&](int64_t t) {
      out[t] = static_cast<T>(
          cu::sensor_adjoint_cell(g, n_t, n_fine, every, w, half, t / n_fine, t % n_fine));
    });
  }
};

// The CPU reference without FMA contraction for a scope.
class GenericIsa {
 public:
  GenericIsa() : knob_(fk::mutable_knob("FK_CPU_ISA")) {
    knob_.set_override(std::string("generic"));
  }
  ~GenericIsa() { knob_.set_override(std::nullopt); }
  GenericIsa(const GenericIsa&) = delete;
  GenericIsa& operator=(const GenericIsa&) = delete;

 private:
  fk::Knob& knob_;
};

struct Case {
  std::vector<int64_t> shape;
  wave::Absorbing absorbing;
  int order;
};

inline const std::vector<Case> kCases = {
    {{14, 12}, wave::Absorbing::kPml, 4},     {{13, 11}, wave::Absorbing::kPml, 2},
    {{12, 12}, wave::Absorbing::kSponge, 4},  {{11, 10}, wave::Absorbing::kCerjan, 2},
    {{9, 8, 7}, wave::Absorbing::kSponge, 4}, {{8, 7, 6}, wave::Absorbing::kNone, 2},
    {{24}, wave::Absorbing::kPml, 4},
};

inline std::string name_of(const Case& c) {
  std::string s = wave::absorbing_name(c.absorbing);
  s.append(" order ").append(std::to_string(c.order)).append(" shape");
  for (int64_t n : c.shape) s.append(" ").append(std::to_string(n));
  return s;
}

inline wave::ShotGeometry geometry_of(const Case& c) {
  const int nd = static_cast<int>(c.shape.size());
  wave::WaveConfig cfg;
  cfg.extent.assign(nd, 1.0);
  cfg.order = c.order;
  cfg.absorbing = c.absorbing;
  cfg.absorb_width = c.absorbing == wave::Absorbing::kNone ? 0.0 : 0.2;
  cfg.c_max = 2.5;
  cfg.dt_obs = 0.03;
  cfg.n_t = 9;
  std::vector<std::vector<double>> src = {std::vector<double>(nd, 0.3),
                                          std::vector<double>(nd, 0.61)};
  std::vector<std::vector<double>> rec = {
      std::vector<double>(nd, 0.8), std::vector<double>(nd, 0.47), std::vector<double>(nd, 0.45)};
  rec[0][0] = 0.12;
  return wave::make_shot_geometry(cfg, fk::Dims(c.shape), src, rec, 6.0, 1.0);
}

inline std::vector<double> random_velocity(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(1.5, 2.5);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

template <typename T>
std::vector<T> to_vec(const fk::Tensor& t) {
  return t.contiguous().to_vector<T>();
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

}  // namespace nefi::wave_cells_test
