// The row-reduction launchers against the CPU and plain loops (see parity.h):
// sum, prod, max and min over rows short and long (two passes beyond 16384),
// deterministic run to run; prod's backward with zeros in a row; argmax and
// argmin with ties and NaN; softmax and log-softmax forward and backward.
// The fk reduction ops through the dispatch are in reduce_ops_parity_test.cpp.
#include "parity.h"

#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "fk/cuda/kernels.h"

namespace fk::cuda_parity {
namespace {

const char* reduce_name(int op) {
  static const char* names[] = {"sum", "prod", "max", "min"};
  return names[op];
}

// Plain-loop references over the rows of a contiguous [outer, inner] f64 array.
std::vector<double> rows_ref(const std::vector<double>& v, int64_t outer, int64_t inner, int op) {
  std::vector<double> r(static_cast<size_t>(outer));
  for (int64_t o = 0; o < outer; ++o) {
    double acc = op == cuda::kReduceSum    ? 0.0
                 : op == cuda::kReduceProd ? 1.0
                 : op == cuda::kReduceMax  ? -INFINITY
                                           : INFINITY;
    for (int64_t i = 0; i < inner; ++i) {
      double x = v[static_cast<size_t>(o * inner + i)];
      if (op == cuda::kReduceSum) acc += x;
      if (op == cuda::kReduceProd) acc *= x;
      if (op == cuda::kReduceMax) acc = std::max(acc, x);
      if (op == cuda::kReduceMin) acc = std::min(acc, x);
    }
    r[static_cast<size_t>(o)] = acc;
  }
  return r;
}

DType reduce_out(int op, DType dt) {
  return static_cast<DType>(cuda::reduce_out_dtype(op, code(dt)));
}

// launch_reduce_lastdim over [outer, inner]; products stay near 1 and integer
// sums exact.
OpCase reduce_row(int op, int64_t outer, int64_t inner) {
  std::vector<DType> dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16,
                               DType::I32, DType::I64, DType::Bool};
  if (op <= cuda::kReduceProd) dtypes.insert(dtypes.end(), {DType::C64, DType::C128});
  return {
      .name = std::string("launch_reduce_") + reduce_name(op) + "_" + std::to_string(outer) + "x" +
              std::to_string(inner),
      .dtypes = dtypes,
      .inputs =
          [=](DType dt) {
            const Dims shape{outer, inner};
            if (op != cuda::kReduceProd) return Inputs{random_of(shape, dt, -4, 4, 71)};
            if (is_integral(dt)) return Inputs{ones(shape, {dt})};
            return Inputs{random_of(shape, dt, 0.999, 1.001, 71)};
          },
      .device =
          [=](const Inputs& in) {
            Tensor out = device_empty({outer}, reduce_out(op, in[0].dtype()));
            cuda::launch_reduce_lastdim(op, code(in[0].dtype()), in[0].data_ptr(), out.data_ptr(),
                                        outer, inner, stream());
            return out;
          },
      .reference =
          [=](const Inputs& in) {
            const Tensor& x = in[0];
            const DType out_dt = reduce_out(op, x.dtype());
            if (op == cuda::kReduceSum) return sum(x, {1}).to(out_dt);  // f16/bf16 in f32
            if (is_complex(x.dtype())) {
              std::vector<c128> v = x.to_vector<c128>(), p(static_cast<size_t>(outer), 1.0);
              for (int64_t o = 0; o < outer; ++o)
                for (int64_t i = 0; i < inner; ++i) p[o] *= v[o * inner + i];
              return from_vector(p, {outer}).to(out_dt);
            }
            return from_vector(rows_ref(x.to_vector<double>(), outer, inner, op), {outer})
                .to(out_dt);
          },
      .tol =
          [=](DType dt) {
            Tol tol = tol_for(dt);
            if (op == cuda::kReduceSum) tol.atol *= std::sqrt(static_cast<double>(inner)) * 4;
            return tol;
          },
      .deterministic = true,
  };
}

// The gradient of prod along rows against the product of the other elements of
// the row taken one by one (O(n^2), no prefix products); row 1 holds one zero,
// row 2 two.
OpCase prod_backward_row() {
  constexpr int64_t outer = 5, inner = 7;
  return {
      .name = "launch_prod_backward",
      .dtypes = {DType::F64, DType::F32, DType::C128, DType::C64},
      .inputs =
          [](DType dt) {
            std::vector<c128> xv =
                random_of({outer, inner}, DType::C128, -1.5, 1.5, 81).to_vector<c128>();
            xv[1 * inner + 3] = 0;
            xv[2 * inner + 0] = 0;
            xv[2 * inner + 6] = 0;
            // Real dtypes keep the real parts.
            return Inputs{from_vector(xv, {outer, inner}).to(dt),
                          random_of({outer}, dt, -1, 1, 82)};
          },
      .device =
          [](const Inputs& in) {
            Tensor out = device_empty({outer, inner}, in[0].dtype());
            cuda::launch_prod_backward_lastdim(code(in[0].dtype()), in[0].data_ptr(),
                                               in[1].data_ptr(), out.data_ptr(), outer, inner,
                                               stream());
            return out;
          },
      .reference =
          [](const Inputs& in) {
            std::vector<c128> xv = in[0].to_vector<c128>(), gv = in[1].to_vector<c128>();
            std::vector<c128> want(xv.size());
            for (int64_t o = 0; o < outer; ++o) {
              for (int64_t i = 0; i < inner; ++i) {
                c128 others = 1.0;
                for (int64_t j = 0; j < inner; ++j) {
                  if (j != i) others *= xv[o * inner + j];
                }
                want[o * inner + i] = gv[o] * std::conj(others);
              }
            }
            return from_vector(want, {outer, inner}).to(in[0].dtype());
          },
  };
}

// The first best index per row; NaN wins. Every real dtype the launcher
// takes but bool (a row of its own in reduce_ops_parity_test.cpp); integer
// and half rows hold many ties.
OpCase argreduce_row(bool is_max) {
  constexpr int64_t outer = 9, inner = 1500;
  return {
      .name = is_max ? "launch_argmax" : "launch_argmin",
      .dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64},
      .inputs =
          [](DType dt) {
            std::vector<double> v =
                random_of({outer, inner}, DType::F64, -3, 3, 81).to_vector<double>();
            v[5 * inner + 100] = 10;
            v[5 * inner + 1200] = 10;  // tie: the first wins
            if (is_floating(dt)) v[6 * inner + 7] = NAN;
            return Inputs{from_vector(v, {outer, inner}).to(dt)};
          },
      .device =
          [is_max](const Inputs& in) {
            Tensor out = device_empty({outer}, DType::I64);
            cuda::launch_argreduce_lastdim(is_max, code(in[0].dtype()), in[0].data_ptr(),
                                           static_cast<int64_t*>(out.data_ptr()), outer, inner,
                                           stream());
            return out;
          },
      .reference =
          [is_max](const Inputs& in) {
            std::vector<double> v = in[0].to(DType::F64).to_vector<double>();
            std::vector<int64_t> best(outer, 0);
            for (int64_t o = 0; o < outer; ++o) {
              for (int64_t i = 1; i < inner; ++i) {
                double a = v[o * inner + i], b = v[o * inner + best[o]];
                if (std::isnan(b)) break;
                if (std::isnan(a) || (is_max ? a > b : a < b)) best[o] = i;
              }
            }
            return from_vector(best, {outer});
          },
      .bitwise = true,
  };
}

// Softmax (or log-softmax) of the rows of x, and its backward from (g, y), as
// plain f64 loops.
std::vector<double> softmax_ref(const std::vector<double>& x, int64_t outer, int64_t inner,
                                bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < inner; ++i) m = std::max(m, x[o * inner + i]);
    for (int64_t i = 0; i < inner; ++i) s += std::exp(x[o * inner + i] - m);
    for (int64_t i = 0; i < inner; ++i) {
      double z = x[o * inner + i] - m;
      y[o * inner + i] = log ? z - std::log(s) : std::exp(z) / s;
    }
  }
  return y;
}
std::vector<double> softmax_backward_ref(const std::vector<double>& g, const std::vector<double>& y,
                                         int64_t outer, int64_t inner, bool log) {
  std::vector<double> gi(g.size());
  for (int64_t o = 0; o < outer; ++o) {
    double dot = 0;
    for (int64_t i = 0; i < inner; ++i)
      dot += log ? g[o * inner + i] : g[o * inner + i] * y[o * inner + i];
    for (int64_t i = 0; i < inner; ++i) {
      double yy = y[o * inner + i], gg = g[o * inner + i];
      gi[o * inner + i] = log ? gg - std::exp(yy) * dot : yy * (gg - dot);
    }
  }
  return gi;
}

constexpr int64_t kSoftmaxRows = 6;

OpCase softmax_row(int64_t inner, bool log) {
  const int64_t outer = kSoftmaxRows;
  return {
      .name = std::string(log ? "launch_log_softmax_" : "launch_softmax_") + std::to_string(inner),
      .dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16},
      .inputs =
          [=](DType dt) {
            return Inputs{random_of({outer, inner}, dt, -5, 5, 91)};
          },
      .device =
          [=](const Inputs& in) {
            Tensor y = device_empty(in[0].shape(), in[0].dtype());
            cuda::launch_softmax_lastdim(code(in[0].dtype()), in[0].data_ptr(), y.data_ptr(), outer,
                                         inner, log, stream());
            return y;
          },
      .reference =
          [=](const Inputs& in) {
            return from_vector(softmax_ref(in[0].to_vector<double>(), outer, inner, log),
                               in[0].shape());
          },
      .tol =
          [](DType dt) {
            Tol tol = tol_for(dt);
            tol.atol *= 4;
            return tol;
          },
  };
}

// The backward from (g, y), y the softmax of random rows in the row's dtype.
OpCase softmax_backward_row(int64_t inner, bool log) {
  const int64_t outer = kSoftmaxRows;
  return {
      .name = std::string(log ? "launch_log_softmax_backward_" : "launch_softmax_backward_") +
              std::to_string(inner),
      .dtypes = {DType::F32, DType::F64, DType::F16, DType::BF16},
      .inputs =
          [=](DType dt) {
            Tensor x = random_of({outer, inner}, DType::F64, -5, 5, 91).to(dt);
            Tensor y =
                from_vector(softmax_ref(x.to_vector<double>(), outer, inner, log), x.shape());
            return Inputs{random_of({outer, inner}, dt, -1, 1, 92), y.to(dt)};
          },
      .device =
          [=](const Inputs& in) {
            Tensor gi = device_empty(in[0].shape(), in[0].dtype());
            cuda::launch_softmax_backward_lastdim(code(in[0].dtype()), in[0].data_ptr(),
                                                  in[1].data_ptr(), gi.data_ptr(), outer, inner,
                                                  log, stream());
            return gi;
          },
      .reference =
          [=](const Inputs& in) {
            return from_vector(softmax_backward_ref(in[0].to_vector<double>(),
                                                    in[1].to_vector<double>(), outer, inner, log),
                               in[0].shape());
          },
      .tol =
          [=](DType dt) {
            Tol tol = tol_for(dt);
            tol.atol *= 4 * std::sqrt(static_cast<double>(inner));
            return tol;
          },
  };
}

std::vector<OpCase> rows() {
  std::vector<OpCase> r;
  struct Rows {
    int64_t outer, inner;
  };
  for (Rows s :
       {Rows{5, 1}, Rows{7, 33}, Rows{64, 1000}, Rows{2, 16385}, Rows{3, 70001}, Rows{1, 300000}}) {
    for (int op : {cuda::kReduceSum, cuda::kReduceProd, cuda::kReduceMax, cuda::kReduceMin}) {
      if (op == cuda::kReduceProd && s.inner > 33) continue;  // would overflow
      r.push_back(reduce_row(op, s.outer, s.inner));
    }
  }
  r.push_back(prod_backward_row());
  r.push_back(argreduce_row(true));
  r.push_back(argreduce_row(false));
  for (int64_t inner : {int64_t{1}, int64_t{10}, int64_t{777}}) {
    for (bool log : {false, true}) {
      r.push_back(softmax_row(inner, log));
      r.push_back(softmax_backward_row(inner, log));
    }
  }
  return r;
}

FK_PARITY_TABLE(Reduce, rows());

}  // namespace
}  // namespace fk::cuda_parity
